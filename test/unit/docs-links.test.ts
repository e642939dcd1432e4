/**
 * The README and docs/ as a reader follows them: every relative link (and
 * image) points at a file of this repository, every `#anchor` at a heading
 * that exists (GitHub's slugs), the README stays a first screen (under 200
 * lines) and links every page of docs/. Links inside code (fenced blocks and
 * `inline code`) are not links; http(s) and mailto addresses are not checked
 * (no network in tests).
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
const PAGES = ['README.md', ...fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];

/** The text outside fenced code blocks, line by line, with inline code blanked. */
function proseLines(markdown: string): string[] {
  let fence = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      return '';
    }
    return fence ? '' : line.replace(/`[^`]*`/g, '``');
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    const m = !fence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  page: string;
  line: number;
  target: string;
}

function links(page: string): Link[] {
  const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
  return proseLines(text).flatMap((line, i) =>
    [...line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({ page, line: i + 1, target: m[1] })),
  );
}

const ALL = PAGES.flatMap(links);
const relative = ALL.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));

describe('README and docs/', () => {
  test('there are pages and relative links to check', () => {
    expect(PAGES.length).toBeGreaterThan(5);
    expect(relative.length).toBeGreaterThan(20);
  });

  test('every relative link points at a file inside the repository', () => {
    const broken = relative
      .map((l) => ({ ...l, file: l.target.split('#')[0] }))
      .filter((l) => l.file !== '')
      .filter((l) => {
        const resolved = path.resolve(ROOT, path.dirname(l.page), decodeURIComponent(l.file));
        return !resolved.startsWith(ROOT + path.sep) || !fs.existsSync(resolved);
      })
      .map((l) => `${l.page}:${l.line} ${l.target}`);
    expect(broken).toEqual([]);
  });

  test('every #anchor names a heading of the page it points at', () => {
    const cache = new Map<string, Set<string>>();
    const headingsOf = (file: string) => {
      if (!cache.has(file)) cache.set(file, anchors(fs.readFileSync(file, 'utf8')));
      return cache.get(file)!;
    };
    const broken = relative
      .filter((l) => l.target.includes('#'))
      .filter((l) => {
        const [file, anchor] = l.target.split('#');
        const target = file === '' ? path.join(ROOT, l.page) : path.resolve(ROOT, path.dirname(l.page), decodeURIComponent(file));
        if (!target.endsWith('.md') || !fs.existsSync(target)) return true;
        return !headingsOf(target).has(decodeURIComponent(anchor));
      })
      .map((l) => `${l.page}:${l.line} ${l.target}`);
    expect(broken).toEqual([]);
  });

  test('the README is a first screen that leads to every page of docs/', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThan(200);
    const linked = new Set(links('README.md').map((l) => l.target.split('#')[0]));
    const unlinked = PAGES.filter((p) => p !== 'README.md' && !linked.has(p));
    expect(unlinked).toEqual([]);
    expect(linked).toContain('docs/images/dashboard.png');
  });

  test('the slugs follow GitHub', () => {
    expect([...anchors('# Usage statistics (opt-in)\n## Soak (`bench/soak.ts`)\n## A\n## A\n```\n# not a heading\n```')]).toEqual([
      'usage-statistics-opt-in',
      'soak-benchsoakts',
      'a',
      'a-1',
    ]);
  });
});
