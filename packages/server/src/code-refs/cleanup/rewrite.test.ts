import { describe, expect, it } from 'vitest';
import type { FlagValue } from './constants.js';
import { rewriteFile } from './rewrite.js';

const WRAPPERS = [
  { name: 'isOn', keyArgument: 0 },
  { name: 'flagFor', keyArgument: 1 },
];

function rewrite(text: string, value: FlagValue = true, extension = '.tsx') {
  return rewriteFile(text, extension, { key: 'checkout', value, wrappers: WRAPPERS });
}

/** The rewritten text; fails when the file was left (with the places, to see why). */
function rewritten(text: string, value: FlagValue = true, extension = '.tsx'): string {
  const result = rewrite(text, value, extension);
  expect(result.places).toEqual([]);
  expect(result.text).not.toBeNull();
  return result.text ?? '';
}

describe('cleanup: the reads that are replaced', () => {
  it.each([
    ["vexil.boolVariation('checkout', user, false)", true],
    ["vexil.boolVariationDetail('checkout', user, false).value", true],
    ["await client.getBooleanValue('checkout', false)", true],
    ["(await client.getBooleanDetails('checkout', false)).value", true],
    ["client.getStringValue('checkout', 'a')", 'b'],
    ["vexil.numberVariation('checkout', user, 1)", 2],
    ["useBooleanFlagValue('checkout', false)", true],
    ["useFlag('checkout', false).value", true],
    ["isOn('checkout')", true],
    ["flagFor(user, 'checkout')", true],
  ])('%s becomes the value', (read, value) => {
    const text = `async function f(user: object) {\n  const v = ${read};\n  return v;\n}\n`;
    expect(rewritten(text, value)).toBe(
      `async function f(user: object) {\n  const v = ${JSON.stringify(value).replace(/"/g, "'")};\n  return v;\n}\n`,
    );
  });

  it('const { value } = useFlag(…) becomes a constant; an object flag becomes a literal', () => {
    expect(
      rewritten(
        "const { value: theme } = useFlag('checkout', 'light');\nexport const t = () => theme;\n",
        'dark',
      ),
    ).toBe("const theme = 'dark';\nexport const t = () => theme;\n");
    expect(
      rewritten(
        "const limits = client.getObjectValue('checkout', {});\nexport const l = () => limits;\n",
        {
          max: 3,
          'per-day': [1, null],
        },
      ),
    ).toBe(
      "const limits = {\n  max: 3,\n  'per-day': [1, null]\n};\nexport const l = () => limits;\n",
    );
  });
});

describe('cleanup: what follows from the constant', () => {
  it('keeps one branch of if/else, splices a block, drops what follows a kept return', () => {
    const text = [
      'export function title(name: string) {',
      '  // Which title?',
      "  if (isOn('checkout')) {",
      '    const upper = name.toUpperCase();',
      '    return upper;',
      '  } else {',
      '    console.log(name);',
      '  }',
      '  return name;',
      '}',
      '',
    ].join('\n');
    expect(rewritten(text, true)).toBe(
      [
        'export function title(name: string) {',
        '  // Which title?',
        '  const upper = name.toUpperCase();',
        '  return upper;',
        '}',
        '',
      ].join('\n'),
    );
    expect(rewritten(text, false)).toBe(
      [
        'export function title(name: string) {',
        '  // Which title?',
        '  console.log(name);',
        '  return name;',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('folds !, &&, ||, ?? and comparisons with literals', () => {
    const text = [
      "const on = isOn('checkout');",
      'export const a = !on ? 1 : 2;',
      'export function g(user: { admin: boolean }) {',
      '  if (user.admin && on) return 1;',
      '  if (on || user.admin) return 2;',
      '  return 3;',
      '}',
      "const variant = client.getStringValue('checkout', 'a');",
      "export const b = variant === 'b' ? 'new' : 'old';",
      "export const c = () => variant !== 'b';",
      '',
    ].join('\n');
    expect(rewritten(text.split('const variant')[0] ?? '', true)).toBe(
      [
        'export const a = 2;',
        'export function g(user: { admin: boolean }) {',
        '  if (user.admin) return 1;',
        '  return 2;',
        '}',
        '',
      ].join('\n'),
    );
    expect(rewritten(`const variant${text.split('const variant')[1]}`, 'b')).toBe(
      "export const b = 'new';\nexport const c = () => false;\n",
    );
  });

  it('keeps what JSX renders: {flag && <New />}, {flag ? <A /> : <B />}', () => {
    const text = [
      'export function Page() {',
      "  const on = useBooleanFlagValue('checkout', false);",
      '  return (',
      '    <main>',
      '      {on && <New />}',
      '      {on ? <A /> : <B />}',
      '      {!on && <Old />}',
      '    </main>',
      '  );',
      '}',
      '',
    ].join('\n');
    expect(rewritten(text, true)).toBe(
      [
        'export function Page() {',
        '  return (',
        '    <main>',
        '      <New />',
        '      <A />',
        '    </main>',
        '  );',
        '}',
        '',
      ].join('\n'),
    );
    expect(rewritten(text, false)).toBe(
      [
        'export function Page() {',
        '  return (',
        '    <main>',
        '      <B />',
        '      <Old />',
        '    </main>',
        '  );',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('removes imports and functions left unused, keeps exported ones and the rest byte for byte', () => {
    const text = [
      "import { useBooleanFlagValue } from '@openfeature/react-sdk';",
      "import { New, Old } from './parts';   // odd   spacing stays",
      '',
      'function helper() {',
      '  return 1;',
      '}',
      'export function Page() {',
      "  if (useBooleanFlagValue('checkout', false)) return <New n={helper()} />;",
      '  return <Old />;',
      '}',
      '',
    ].join('\n');
    expect(rewritten(text, false)).toBe(
      [
        "import { Old } from './parts';   // odd   spacing stays",
        '',
        'export function Page() {',
        '  return <Old />;',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('keeps CRLF line ends and double quotes where the file has them', () => {
    const text =
      'const t = client.getStringValue("checkout", "a");\r\nexport const u = () => t;\r\n';
    expect(rewritten(text, 'b', '.ts')).toBe('const t = "b";\r\nexport const u = () => t;\r\n');
  });
});

describe('cleanup: places left to a person (the file is left as it was)', () => {
  it.each([
    [
      "export const [on, setOn] = useState(isOn('checkout'));",
      'the value is stored in state (useState)',
    ],
    ["track(isOn('checkout'));", 'the value is passed to track()'],
    ["export let on = isOn('checkout');", 'the value is stored in a variable that can change (on)'],
    [
      "export const el = <Checkout enabled={isOn('checkout')} />;",
      'the value is passed to a component as its enabled prop',
    ],
    ["export const on = isOn('checkout');", 'the value is exported as on'],
    [
      "const on = isOn('checkout');\nsend({ on });",
      'the value is stored in an object (through on)',
    ],
    [
      "export const r = pricing('checkout');",
      'the key is passed to pricing(), which may read it by a dynamic key',
    ],
    ["export const FLAGS = { checkout: 'checkout' };", 'the key is stored in an object'],
    [
      'export const el = <Feature flag="checkout" />;',
      'the key is given to <Feature> as its flag prop',
    ],
    [
      "type Key = 'checkout' | 'other';\nexport const k: Key = 'other';",
      'the key is part of a type',
    ],
    [
      "const d = client.getBooleanDetails('checkout', false);\nexport const r = d.reason;",
      'getBooleanDetails() details are used beyond their .value',
    ],
  ])('%s', (text, reason) => {
    const result = rewrite(`${text}\n`);
    expect(result.text).toBeNull();
    expect(result.places.map((place) => place.reason)).toEqual([reason]);
  });

  it('a file with one such place is left whole, even where other reads could go', () => {
    const result = rewrite("if (isOn('checkout')) go();\ntrack(isOn('checkout'));\n");
    expect(result).toMatchObject({ text: null, places: [{ line: 2, column: 12 }] });
  });

  it('an alias constant used only by reads goes with them; a file that does not read the key is untouched', () => {
    expect(rewritten("const KEY = 'checkout';\nexport const x = isOn(KEY) ? 1 : 2;\n")).toBe(
      'export const x = 1;\n',
    );
    expect(rewrite("export const other = isOn('other');\n")).toMatchObject({
      text: null,
      places: [],
    });
  });
});
