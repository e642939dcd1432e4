/**
 * German is as complete as English: every node's help has the same sections
 * with the same message properties and as many paragraphs, and every catalog
 * key (labels, status texts, errors, tips, palette labels and category)
 * exists in both languages.
 */
import fs from 'node:fs';
import path from 'node:path';

const LOCALES = path.join(__dirname, '..', '..', 'locales');
const LANGS = ['en-US', 'de'];
const files = fs.readdirSync(path.join(LOCALES, 'en-US'));
const helps = files.filter((f) => f.endsWith('.html'));
const catalogs = files.filter((f) => f.endsWith('.json'));
const read = (lang: string, file: string) => fs.readFileSync(path.join(LOCALES, lang, file), 'utf8');

/** Each help section (the intro, then one per <h3>): its property names (msg properties as written, others counted) and paragraph count. */
function sections(html: string) {
  return html.split(/<h3>/).map((part) => {
    const dts = [...part.matchAll(/<dt[^>]*>([\s\S]*?)(?:<span|<\/dt>)/g)].map((m) => m[1].trim());
    return {
      // msg properties (payload, topic, start_date, end_date...) are the same words in every language; labels are translated.
      properties: dts.map((d) => (/^[a-z_][a-z_, ]*$/.test(d) ? d : '(label)')),
      types: [...part.matchAll(/<span class="property-type">([^<]*)<\/span>/g)].length,
      paragraphs: (part.match(/<p>/g) ?? []).length,
    };
  });
}

function keysOf(obj: unknown, prefix = ''): string[] {
  if (typeof obj !== 'object' || obj === null) return [prefix];
  return Object.entries(obj).flatMap(([k, v]) => keysOf(v, prefix ? `${prefix}.${k}` : k));
}

describe('en-US and de', () => {
  test('both languages have the same files', () => {
    expect(fs.readdirSync(path.join(LOCALES, 'de')).sort()).toEqual([...files].sort());
    expect(helps.length).toBeGreaterThanOrEqual(6);
  });

  test.each(helps)('%s: the German help has every section, message property and paragraph of the English one', (file) => {
    const [en, de] = LANGS.map((lang) => read(lang, file));
    const type = file.replace(/\.html$/, '');
    for (const html of [en, de]) expect(html).toContain(`data-help-name="${type}"`);
    expect(sections(en).length).toBeGreaterThan(1);
    expect(sections(de)).toEqual(sections(en));
  });

  test.each(catalogs)('%s: every key in both catalogs, no empty text', (file) => {
    const [en, de] = LANGS.map((lang) => JSON.parse(read(lang, file)) as Record<string, unknown>);
    // The node's own texts, and the palette category's (Node-RED looks it up as <set>:palette.label.<category>).
    const type = file.replace(/\.json$/, '');
    expect(Object.keys(en)).toEqual(type === 'printfarm-server' ? [type] : [type, 'palette']);
    expect(keysOf(de).sort()).toEqual(keysOf(en).sort());
    const texts = (obj: unknown): string[] => (typeof obj === 'string' ? [obj] : Object.values(obj as object).flatMap(texts));
    expect(texts(de).filter((t) => !t.trim())).toEqual([]);
    // Placeholders such as __printer__ are kept in the translation.
    const placeholders = (o: unknown) => texts(o).flatMap((t) => t.match(/__\w+__/g) ?? []).sort();
    expect(placeholders(de)).toEqual(placeholders(en));
  });
});
