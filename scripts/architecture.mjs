// The server's folder graph, read from its imports (design record 051).
//
//   node scripts/architecture.mjs           prints the figures and the Mermaid diagram
//   node scripts/architecture.mjs --write   writes the diagram into docs/architecture.md
//   node scripts/architecture.mjs --check   fails when the committed diagram differs from the
//                                           code, or when two folders import each other
//
// A "room" is a top-level folder of packages/server/src, or a file directly in it. Only
// production files count: tests, test-support and migrations are left out.
import console from 'node:console';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'packages/server/src');
const page = join(root, 'docs/architecture.md');
const BEGIN = '<!-- architecture:begin (written by `node scripts/architecture.mjs --write`) -->';
const END = '<!-- architecture:end -->';

/**
 * The layers, lowest first. A room may import its own layer and the layers below it; an import
 * that points to a higher layer is counted (and the exceptions are named in design record 051).
 */
const LAYERS = [
  [
    'clock.ts',
    'config.ts',
    'errors.ts',
    'services.ts',
    'db',
    'events',
    'mail',
    'telemetry',
    'statistics',
  ],
  ['http'],
  ['auth'],
  ['api'],
  [
    'management',
    'writes',
    'change-requests',
    'flags-as-code',
    'webhooks',
    'audit-log',
    'usage',
    'evaluation',
    'relay-feed',
    'relay',
    'mcp',
    'sign-in',
    'schedules',
    'ops',
    'console',
    'cluster',
    'code-refs',
    // The node bus carries evaluation's changes, SDK key revocations and streams between processes.
    'bus',
  ],
  ['node', 'cli.ts'],
];

/** @param {string} file */
function isProduction(file) {
  const path = relative(source, file).split(sep).join('/');
  return (
    path.endsWith('.ts') &&
    !path.endsWith('.test.ts') &&
    !path.endsWith('.d.ts') &&
    !path.startsWith('test-support/') &&
    !path.includes('/migrations/')
  );
}

/** @param {string} dir @returns {string[]} */
function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** @param {string} file */
function roomOf(file) {
  return relative(source, file).split(sep)[0];
}

/** @param {string} room */
function layerOf(room) {
  const layer = LAYERS.findIndex((rooms) => rooms.includes(room));
  if (layer === -1) {
    throw new Error(`${room} has no layer: add it to LAYERS in scripts/architecture.mjs`);
  }
  return layer;
}

/** @param {string} from @param {string} specifier */
function resolveImport(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier).replace(/\.js$/, '.ts');
  return target.startsWith(source + sep) ? target : undefined;
}

const files = walk(source).filter(isProduction).sort();
/** @type {{ from: string, to: string, fromRoom: string, toRoom: string }[]} */
const imports = [];
/** @type {Map<string, number>} */
const lines = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const room = roomOf(file);
  lines.set(room, (lines.get(room) ?? 0) + text.split('\n').length - 1);
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    const target = resolveImport(file, fileName);
    if (target === undefined) continue;
    const toRoom = roomOf(target);
    if (toRoom === room) continue;
    imports.push({
      from: relative(source, file),
      to: relative(source, target),
      fromRoom: room,
      toRoom,
    });
  }
}

/** @type {Map<string, number>} */
const edges = new Map();
for (const { fromRoom, toRoom } of imports) {
  const key = `${fromRoom} ${toRoom}`;
  edges.set(key, (edges.get(key) ?? 0) + 1);
}
const mutual = [...edges.keys()]
  .map((key) => key.split(' '))
  .filter(([a, b]) => a < b && edges.has(`${b} ${a}`));
const upward = imports.filter(({ fromRoom, toRoom }) => layerOf(fromRoom) < layerOf(toRoom));
const largeFiles = files
  .map((file) => ({
    file: relative(source, file),
    lines: readFileSync(file, 'utf8').split('\n').length - 1,
  }))
  .filter(({ lines: count }) => count > 700);

/** @param {string} room */
const nodeId = (room) => room.replace(/[^a-z0-9]/gi, '_');
const rooms = [...lines.keys()].sort((a, b) => layerOf(a) - layerOf(b) || a.localeCompare(b));
const diagram = [
  '```mermaid',
  'flowchart BT',
  ...LAYERS.map((layerRooms, layer) => {
    const present = rooms.filter((room) => layerRooms.includes(room));
    return [
      `  subgraph layer${layer}[layer ${layer}]`,
      ...present.map((room) => `    ${nodeId(room)}["${room}"]`),
      '  end',
    ].join('\n');
  }),
  ...[...edges.keys()].sort().map((key) => {
    const [from, to] = key.split(' ');
    const arrow = layerOf(from) < layerOf(to) ? '-.->' : '-->';
    return `  ${nodeId(from)} ${arrow} ${nodeId(to)}`;
  }),
  '```',
].join('\n');

/** @param {string} text */
function withDiagram(text) {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start === -1 || end === -1) throw new Error(`${page} lacks the diagram's markers`);
  return `${text.slice(0, start + BEGIN.length)}\n\n${diagram}\n\n${text.slice(end)}`;
}

/**
 * Folder pairs that still import each other, to be untied (design record 051). The check fails
 * for a pair not listed here, and for a listed pair that no longer exists, so the list only
 * shrinks.
 */
const KNOWN_MUTUAL = [
  'auth http',
  'auth services.ts',
  'db events',
  'services.ts usage',
  'services.ts webhooks',
];

const mode = process.argv[2];
if (mode === '--write') {
  writeFileSync(page, withDiagram(readFileSync(page, 'utf8')));
} else if (mode === '--check') {
  const problems = [];
  const committed = readFileSync(page, 'utf8');
  if (withDiagram(committed) !== committed) {
    problems.push(
      'docs/architecture.md: the folder graph differs from the imports; run `node scripts/architecture.mjs --write`',
    );
  }
  const known = new Set(KNOWN_MUTUAL);
  for (const pair of known) {
    if (!mutual.some(([a, b]) => `${a} ${b}` === pair)) {
      problems.push(
        `${pair.replace(' ', ' and ')} no longer import each other: remove them from KNOWN_MUTUAL`,
      );
    }
  }
  for (const [a, b] of mutual.filter(([a, b]) => !known.has(`${a} ${b}`))) {
    const ties = imports
      .filter(
        ({ fromRoom, toRoom }) =>
          (fromRoom === a && toRoom === b) || (fromRoom === b && toRoom === a),
      )
      .map(({ from, to }) => `    ${from} -> ${to}`);
    problems.push(`${a} and ${b} import each other:\n${ties.join('\n')}`);
  }
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exit(1);
  }
} else {
  const total = [...lines.values()].reduce((sum, count) => sum + count, 0);
  console.log(`production files: ${files.length}, lines: ${total}`);
  console.log('rooms by production lines:');
  for (const [room, count] of [...lines].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${String(count).padStart(6)}  ${room}`);
  }
  console.log(`folder pairs that import each other: ${mutual.length}`);
  for (const [a, b] of mutual) console.log(`  ${a} <-> ${b}`);
  console.log(`imports from a lower layer to a higher one: ${upward.length}`);
  for (const { from, to } of upward) console.log(`  ${from} -> ${to}`);
  console.log(`production files over 700 lines: ${largeFiles.length}`);
  for (const { file, lines: count } of largeFiles) console.log(`  ${count}  ${file}`);
  console.log();
  console.log(diagram);
}
