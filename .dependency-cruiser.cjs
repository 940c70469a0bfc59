/**
 * The layering of lib/, checked by `npm test` (dependency-cruiser): each layer imports only from
 * the layers listed before it, and nothing imports in a cycle. docs/architecture.md draws it.
 */
const LAYERS = [
  ['base', '^lib/errors[.]ts$'],
  ['diagnostics', '^lib/diagnostics/'],
  ['protocol', '^lib/(protocol/|tensor[.]ts$)'],
  ['transport', '^lib/transport/'],
  ['kernels', '^lib/kernels/'],
  ['topology', '^lib/topology/'],
  ['coordinator', '^lib/coordinator/'],
  ['collectives', '^lib/collectives/'],
  ['session', '^lib/session/'],
  // rxccl/testing, its own subpath: a top layer over the library, which nothing else imports.
  ['testing', '^lib/testing/'],
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

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: { path: '^lib/' }, to: { circular: true } },
    ...upward,
    ...sideways,
  ],
  options: {
    // bench/ is a user of the package (its script runs the CLI), not part of the layering.
    doNotFollow: { path: ['node_modules', '^bench/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
