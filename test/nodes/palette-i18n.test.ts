/**
 * A German editor shows the pack in German: every palette label, the
 * palette category and the default node labels come from the catalogs
 * (locales/<lang>/<set>.json) through Node-RED's `this._`, as the dialogs'
 * labels do; none is an English text written into the editor script (the
 * palette said "print farm", "job watcher", "stats" and nodes "farm stats" in
 * a German editor). Every key the editor scripts ask for exists in en-US and
 * de. Runs the editor scripts from the sources, as the Node-RED editor runs
 * them (test/helpers/editor-scripts.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { registerEditor, scripts, type EditorDefinition } from '../helpers/editor-scripts';

const ROOT = path.join(__dirname, '..', '..');
const NODES = path.join(ROOT, 'nodes');
const LOCALES = path.join(ROOT, 'locales');
const SETS = Object.keys((JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { 'node-red': { nodes: Record<string, string> } })['node-red'].nodes);
const PALETTE_SETS = SETS.filter((s) => s !== 'printfarm-server');
const LANGS = ['en-US', 'de'] as const;
type Lang = (typeof LANGS)[number];

const catalog = (lang: Lang, set: string) => JSON.parse(fs.readFileSync(path.join(LOCALES, lang, `${set}.json`), 'utf8')) as Record<string, unknown>;

/** The text at `key` in the catalog, or undefined. */
function lookup(cat: Record<string, unknown>, key: string): string | undefined {
  let v: unknown = cat;
  for (const part of key.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
  return typeof v === 'string' ? v : undefined;
}

/** Node-RED's `def._` of a node set: i18next on the set's namespace, the key itself when missing, __name__ substitutions. */
const translator = (lang: Lang, set: string) => {
  const cat = catalog(lang, set);
  return (key: string, subs: Record<string, unknown> = {}) => (lookup(cat, key) ?? key).replace(/__(\w+)__/g, (m, name: string) => (name in subs ? String(subs[name]) : m));
};

/** Node-RED's category lookup (palette.js createCategory): `<set>:palette.label.<category, escaped, up to its first dash>`. */
const categoryKey = (category: string) => `palette.label.${category.replace(/[\x00-\x2c\x2e-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/g, '_').split('-')[0]}`;

const definition = (set: string): EditorDefinition => registerEditor(NODES, set).get(set)!;
/** What the palette shows: paletteLabel called on the definition (Node-RED gives it `_`). */
const paletteLabel = (set: string, lang: Lang) => {
  const def = definition(set) as EditorDefinition & { paletteLabel?: unknown };
  return typeof def.paletteLabel === 'function' ? (def.paletteLabel as () => string).call({ ...def, _: translator(lang, set) }) : def.paletteLabel;
};
/** A node's label on the canvas: label() on a node of `props` (Node-RED sets node._ = def._). */
const nodeLabel = (set: string, lang: Lang, props: Record<string, unknown>) => (definition(set).label as () => string).call({ name: '', printer: '', ...props, _: translator(lang, set) });

describe('the palette in a German editor', () => {
  test.each(SETS)('%s: the palette label is the catalog\'s text in each language (German in a German editor)', (set) => {
    const [en, de] = LANGS.map((lang) => paletteLabel(set, lang));
    expect(en).toBe(lookup(catalog('en-US', set), `${set}.paletteLabel`));
    expect(de).toBe(lookup(catalog('de', set), `${set}.paletteLabel`));
    expect(de).not.toBe(en);
  });

  test.each(PALETTE_SETS)('%s: the palette category has its catalog text in both languages', (set) => {
    const key = categoryKey(definition(set).category);
    expect(key).toBe('palette.label.print_farm');
    expect(lookup(catalog('en-US', set), key)).toBe('print farm');
    expect(lookup(catalog('de', set), key)).toBe('Druckfarm');
  });

  test.each(PALETTE_SETS)('%s: a node without a name is labelled from the catalog, with and without a printer', (set) => {
    const cases = [{}, { printer: 'x1c-01', scope: 'printer' }];
    for (const props of cases) {
      const [en, de] = LANGS.map((lang) => nodeLabel(set, lang, props));
      for (const label of [en, de]) expect(label).not.toMatch(/nodeLabel|paletteLabel|label\.|__/);
      // Only the printer's id may be the same in both languages.
      if (en !== 'x1c-01') expect(de).not.toBe(en);
    }
    expect(nodeLabel(set, 'de', { name: 'Mein Node' })).toBe('Mein Node');
  });

  test.each(SETS)('%s: every key the editor script and template ask for is in both catalogs', (set) => {
    const html = fs.readFileSync(path.join(NODES, `${set}.html`), 'utf8');
    const js = scripts(html, 'text/javascript').map((s) => s.body).join('\n');
    const keys = new Set([
      ...[...js.matchAll(/\b_\(\s*'([^']+)'/g)].map((m) => m[1]),
      ...[...html.matchAll(/data-i18n="(?:\[[a-z]+\])?([^"]+)"/g)].map((m) => m[1]),
    ]);
    // The shared editor helpers' t('...') reads printfarm-server's catalog.
    const shared = set === 'printfarm-server' ? [...js.matchAll(/\bt\(\s*'([^']+)'/g)].map((m) => `printfarm-server.${m[1]}`) : [];
    // A key ending in '.' is completed in the script with each value of its list (var KINDS = [...]).
    const lists = [...js.matchAll(/var [A-Z]+ = \[([^\]]*)\]/g)].flatMap((m) => [...m[1].matchAll(/'([^']+)'/g)].map((v) => v[1]));
    const complete = (k: string) => (k.endsWith('.') ? lists.map((v) => k + v) : [k]);
    const wanted = [...keys].filter((k) => !k.includes(':') && k.startsWith(`${set}.`)).flatMap(complete).concat(shared);
    expect(wanted.length).toBeGreaterThan(0);
    for (const lang of LANGS) expect({ lang, missing: wanted.filter((k) => lookup(catalog(lang, set), k) === undefined) }).toEqual({ lang, missing: [] });
    // No English palette text written into the script itself.
    expect(js).not.toMatch(/paletteLabel:\s*['"]/);
  });
});
