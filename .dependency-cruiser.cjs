/**
 * The import graph of the whole repository, checked by `npm test` (dependency-cruiser, `npm run
 * layers` over lib/, bench/, bin/, examples/, scripts/ and spec/):
 *
 * - lib/ is layered: each layer imports only from the layers listed before it (and not from its
 *   siblings). docs/architecture.md draws it.
 * - lib/ imports nothing from the folders that use it (bench/, spec/, examples/, scripts/, bin/):
 *   the library builds and runs without them. What it loads from them at run time (the collectives
 *   bench behind `rxccl bench`) it loads by a computed URL, typed by a contract of its own
 *   (lib/cli/bench-options.ts).
 * - bench/ imports nothing from spec/ or examples/; examples/ nothing from spec/ or bench/.
 * - Nothing, anywhere in the repository, imports in a cycle.
 *
 * Type-only imports count (tsPreCompilationDeps). Build output (dist/) and packages are not part of
 * the graph.
 */
const LAYERS = [
  ['base', '^lib/errors[.]ts$'],
  ['diagnostics', '^lib/diagnostics/'],
  ['protocol', '^lib/(protocol/|tensor[.]ts$)'],
  ['transport', '^lib/transport/'],
  ['kernels', '^lib/kernels/'],
  ['topology', '^lib/topology/'],
  // The settings table and the settings object every layer above receives (its parsers: those below, and its own).
  ['settings', '^lib/settings/'],
  ['coordinator', '^lib/coordinator/'],
  ['collectives', '^lib/collectives/'],
  // Communicators: a session's view of the job's links, and the leader that coordinates them.
  ['communicator', '^lib/communicator/'],
  ['session', '^lib/session/'],
  // rxccl/testing, its own subpath: a top layer over the library, which nothing else imports.
  ['testing', '^lib/testing/'],
  // rxccl/tfjs, its own subpath: TensorFlow.js training over the library, which nothing else imports.
  ['tfjs', '^lib/tfjs/'],
  ['launch', '^lib/launch/'],
  ['cli', '^lib/cli/'],
  ['package', '^lib/index[.]ts$'],
];

/** Layers that sit side by side and must not know each other. */
const SIBLINGS = [
  ['kernels', 'topology'],
  ['coordinator', 'kernels'],
  ['coordinator', 'topology'],
  ['coordinator', 'collectives'],
  ['coordinator', 'session'],
  ['testing', 'launch'],
  ['testing', 'cli'],
  ['testing', 'package'],
  ['tfjs', 'testing'],
  ['tfjs', 'launch'],
  ['tfjs', 'cli'],
  ['tfjs', 'package'],
];

const pathOf = (name) => LAYERS.find(([layer]) => layer === name)[1];

const upward = LAYERS.flatMap(([layer, path], index) => {
  const higher = LAYERS.slice(index + 1).map(([, higherPath]) => `(${higherPath})`);
  return higher.length === 0
    ? []
    : [
        {
          name: `no-upward-import-from-${layer}`,
          comment: `${layer} may not import from a layer above it`,
          severity: 'error',
          from: { path },
          to: { path: higher.join('|') },
        },
      ];
});

const sideways = SIBLINGS.flatMap(([first, second]) =>
  [
    [first, second],
    [second, first],
  ].map(([from, to]) => ({
    name: `no-import-from-${from}-into-${to}`,
    comment: `${from} and ${to} are independent layers`,
    severity: 'error',
    from: { path: pathOf(from) },
    to: { path: pathOf(to) },
  })),
);

/** The folders above lib/: they use the library, and the library knows none of them. */
const USERS = '^(bench|spec|examples|scripts|bin)/';

const outside = [
  {
    name: 'no-upward-import-out-of-lib',
    comment: 'lib/ is the library: it may not import from bench/, spec/, examples/, scripts/ or bin/, which use it',
    severity: 'error',
    from: { path: '^lib/' },
    to: { path: USERS },
  },
  {
    name: 'no-import-from-bench-into-spec-or-examples',
    comment: 'bench/ measures the library: it may not import from spec/ or examples/',
    severity: 'error',
    from: { path: '^bench/' },
    to: { path: '^(spec|examples)/' },
  },
  {
    name: 'no-import-from-examples-into-spec-or-bench',
    comment: 'examples/ use the library alone: they may not import from spec/ or bench/',
    severity: 'error',
    from: { path: '^examples/' },
    to: { path: '^(spec|bench)/' },
  },
];

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'no module, anywhere in the repository, imports in a cycle', severity: 'error', from: {}, to: { circular: true } },
    ...upward,
    ...sideways,
    ...outside,
  ],
  options: {
    // The repository's own sources: not packages, Node's modules or build output (dist/).
    includeOnly: { path: '^(lib|bench|bin|examples|scripts|spec)/' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // bin/ and scripts/ are .mjs. Every source file is a root of the cruise (the script names each
    // folder), so each is read even where dependency-cruiser does not follow an import into it.
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs'] },
  },
};
