#!/usr/bin/env node
/**
 * The API reference (docs/api.md), generated from the doc comments of every name the package
 * exports ('rxccl', 'rxccl/testing', 'rxccl/tfjs'), through the TypeScript compiler: signatures as the
 * compiler prints them, so the page cannot drift from the .d.ts files.
 *
 *   node scripts/api-reference.mjs          writes docs/api.md
 *   node scripts/api-reference.mjs --check  exits 1 naming every exported name without a doc
 *                                           comment, or when docs/api.md is not what it would write
 *
 * `--entry <specifier>=<file>` (repeatable) and `--out <file>` document other entry points into
 * another page (the spec checks the checker on a fixture so).
 *
 * spec/docs/api-reference.spec.ts runs the check in `npm test`, so CI fails on an undocumented
 * export or a stale page.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const API_REFERENCE_PATH = join(ROOT, 'docs', 'api.md');

/** The package's entry points: the import specifier users write and the file behind it. */
const ENTRY_POINTS = [
  { specifier: 'rxccl', file: 'lib/index.ts' },
  { specifier: 'rxccl/testing', file: 'lib/testing/index.ts' },
  { specifier: 'rxccl/tfjs', file: 'lib/tfjs/index.ts' },
];

/** Sections of a page, in order: what a declaration is decides where it is listed. */
const SECTIONS = [
  { title: 'Classes', holds: (symbol) => symbol.flags & ts.SymbolFlags.Class },
  { title: 'Functions', holds: (symbol) => symbol.flags & ts.SymbolFlags.Function },
  { title: 'Constants', holds: (symbol) => symbol.flags & ts.SymbolFlags.Variable },
  { title: 'Enums', holds: (symbol) => symbol.flags & ts.SymbolFlags.Enum },
  { title: 'Interfaces', holds: (symbol) => symbol.flags & ts.SymbolFlags.Interface },
  { title: 'Types', holds: (symbol) => symbol.flags & ts.SymbolFlags.TypeAlias },
];

const FORMAT = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope;

function openProgram(entryPoints) {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  return ts.createProgram(entryPoints.map((entry) => join(ROOT, entry.file)), config.options);
}

/** A symbol's doc comment with its tags (`@param`, `@example` ...), as markdown text. */
function documentation(symbol, checker) {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const tags = symbol.getJsDocTags(checker).map((tag) => {
    const body = ts.displayPartsToString(tag.text ?? []).trim();
    return `@${tag.name}${body ? ` ${body}` : ''}`;
  });
  return [text, ...tags].filter((part) => part.length > 0).join('\n\n');
}

/** Declaration text without its body or doc comment: how a type, enum or property is written. */
function declarationText(declaration) {
  return declaration.getText().replace(/\s*\n\s*/g, ' ').trim();
}

function signatures(symbol, checker, name, prefix) {
  const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
  const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
  return type.getCallSignatures().map((signature) => `${prefix}${name}${checker.signatureToString(signature, undefined, FORMAT)}`);
}

/** The public members of a class or interface: [signature lines, doc]. */
function members(symbol, checker) {
  const entries = [];
  const add = (member, isStatic) => {
    const declaration = member.valueDeclaration ?? member.declarations?.[0];
    if (declaration === undefined || ts.isTypeParameterDeclaration(declaration)) return;
    if (ts.getCombinedModifierFlags(declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return;
    if (member.name.startsWith('#') || member.name.startsWith('__')) return;
    const owner = isStatic ? `${symbol.name}.` : '';
    let lines;
    if (member.flags & ts.SymbolFlags.Method) lines = signatures(member, checker, `${owner}${member.name}`, isStatic ? 'static ' : '');
    else if (ts.isPropertySignature(declaration) || ts.isMethodSignature(declaration)) lines = [declarationText(declaration)];
    else {
      const readonly = ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Readonly ? 'readonly ' : '';
      const type = checker.typeToString(checker.getTypeOfSymbolAtLocation(member, declaration), undefined, FORMAT);
      lines = [`${isStatic ? 'static ' : ''}${readonly}${member.name}: ${type}`];
    }
    entries.push({ lines, doc: documentation(member, checker) });
  };
  for (const member of symbol.members?.values() ?? []) add(member, false);
  for (const member of symbol.exports?.values() ?? []) if (member.flags & (ts.SymbolFlags.Method | ts.SymbolFlags.Property)) add(member, true);
  const constructor = symbol.members?.get('__constructor');
  if (constructor !== undefined) {
    const type = checker.getTypeOfSymbolAtLocation(symbol, symbol.valueDeclaration);
    const lines = type.getConstructSignatures().map((signature) => `new ${symbol.name}${checker.signatureToString(signature, undefined, FORMAT)}`);
    entries.unshift({ lines, doc: documentation(constructor, checker) });
  }
  return entries;
}

/** What a page lists for one exported name: its declaration lines and its members. */
function describe(name, symbol, checker) {
  const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
  if (symbol.flags & ts.SymbolFlags.Function) return { lines: signatures(symbol, checker, name, 'function '), members: [] };
  if (symbol.flags & ts.SymbolFlags.Class) return { lines: [`class ${name}`], members: members(symbol, checker) };
  if (symbol.flags & ts.SymbolFlags.Variable) {
    const type = checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, declaration), undefined, FORMAT);
    return { lines: [`const ${name}: ${type}`], members: [] };
  }
  if (symbol.flags & ts.SymbolFlags.Interface) {
    const parameters = declaration.typeParameters ? `<${declaration.typeParameters.map((p) => p.getText()).join(', ')}>` : '';
    const heritage = declaration.heritageClauses?.map((clause) => ` ${clause.getText()}`).join('') ?? '';
    return { lines: [`interface ${name}${parameters}${heritage}`], members: members(symbol, checker) };
  }
  return { lines: [declarationText(declaration)], members: [] };
}

function fence(lines) {
  return ['```ts', ...lines, '```'].join('\n');
}

/**
 * The page and the exported names without a doc comment, from the sources as they are now.
 * @returns {{ markdown: string, undocumented: string[] }}
 */
function renderApiReference(entryPoints = ENTRY_POINTS) {
  const program = openProgram(entryPoints);
  const checker = program.getTypeChecker();
  const undocumented = [];
  const page = [
    '# API reference',
    '',
    'Every name `rxccl`, `rxccl/testing` and `rxccl/tfjs` export, with its signature and doc comment. Generated by',
    '`node scripts/api-reference.mjs` from the sources; `npm test` fails where this page is stale or an',
    'exported name has no doc comment. How the parts fit together: README.md and docs/architecture.md.',
  ];
  for (const entry of entryPoints) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, entry.file)));
    const exported = checker.getExportsOfModule(module).map((alias) => ({
      name: alias.name,
      symbol: alias.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(alias) : alias,
    }));
    page.push('', `## \`${entry.specifier}\``);
    for (const section of SECTIONS) {
      const listed = exported
        .filter(({ symbol }) => section.holds(symbol))
        .filter(({ symbol }) => SECTIONS.find((first) => first.holds(symbol)) === section)
        .sort((a, b) => a.name.localeCompare(b.name));
      if (listed.length === 0) continue;
      page.push('', `### ${section.title}`);
      for (const { name, symbol } of listed) {
        const doc = documentation(symbol, checker);
        if (doc === '') undocumented.push(`${entry.specifier}: ${name}`);
        const { lines, members: parts } = describe(name, symbol, checker);
        page.push('', `#### ${name}`, '', fence(lines));
        if (doc !== '') page.push('', doc);
        for (const part of parts) page.push('', fence(part.lines), ...(part.doc === '' ? [] : ['', part.doc]));
      }
    }
  }
  return { markdown: `${page.join('\n')}\n`, undocumented };
}

/** The command line: `--check`, `--entry specifier=file` (repeatable), `--out file`. */
function parseArguments(argv) {
  const entries = [];
  let out = API_REFERENCE_PATH;
  let check = false;
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (argument === '--check') check = true;
    else if (argument === '--out' && index + 1 < argv.length) out = argv[++index];
    else if (argument === '--entry' && /^[^=]+=.+$/.test(argv[index + 1] ?? '')) {
      const [specifier, file] = argv[++index].split('=');
      entries.push({ specifier, file });
    } else throw new Error(`api-reference: unknown or incomplete argument ${argument}; expected --check, --entry <specifier>=<file>, --out <file>`);
  }
  return { check, out, entryPoints: entries.length > 0 ? entries : ENTRY_POINTS };
}

function main() {
  const { check, out, entryPoints } = parseArguments(process.argv.slice(2));
  const { markdown, undocumented } = renderApiReference(entryPoints);
  if (!check) {
    writeFileSync(out, markdown);
    console.log(`wrote ${out}${undocumented.length > 0 ? `; exported without a doc comment: ${undocumented.join(', ')}` : ''}`);
    return;
  }
  const problems = [];
  if (undocumented.length > 0) problems.push(`exported without a doc comment: ${undocumented.join(', ')}`);
  const written = existsSync(out) ? readFileSync(out, 'utf8') : null;
  if (written !== markdown) problems.push(`${relative(ROOT, out)} is ${written === null ? 'missing' : 'stale'}: run node scripts/api-reference.mjs`);
  for (const problem of problems) console.error(`api reference: ${problem}`);
  process.exitCode = problems.length > 0 ? 1 : 0;
}

main();
