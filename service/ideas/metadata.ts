/**
 * Reads a model page's metadata from its HTML: OpenGraph / Twitter / plain
 * meta tags and JSON-LD (schema.org Product, 3DModel, CreativeWork...).
 * Pure text processing: no DOM, no script is run, nothing is fetched.
 */

export interface ModelFile {
  name: string;
  format: string | null;
  size: string | null;
}

export interface FileInfo {
  /** Number of files the page names (null when it does not say). */
  file_count: number | null;
  /** File formats, upper-case extensions without dot (e.g. STL, 3MF). */
  formats: string[];
  files: ModelFile[];
}

export interface PageMetadata {
  title: string | null;
  creator_name: string | null;
  description: string | null;
  thumbnail_url: string | null;
  file_info: FileInfo | null;
}

export const LIMITS = { title: 300, creator: 200, description: 10_000, url: 2048, files: 100, fileName: 255 } as const;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8}|#39);/gi, (whole, name: string) => {
    const lower = name.toLowerCase();
    if (lower.startsWith('#x') || lower.startsWith('#')) {
      const code = lower.startsWith('#x') ? Number.parseInt(lower.slice(2), 16) : Number.parseInt(lower.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[lower] ?? whole;
  });
}

/**
 * `html` cut after the last match of `closer` (all of it when `closer` never matches). A
 * pattern like /<meta\b[^>]*>/ or /<title>[\s\S]*?<\/title>/ that finds no closer after
 * a start scans to the end of the text and fails, and then does it again from the next start:
 * quadratic, minutes of blocked event loop on a 2 MB page of unclosed tags. In the prefix every
 * start has its closer ahead, so each match succeeds at its start and the scan stays linear;
 * no match can lie past the last closer, so the matches are the same.
 */
function closedPrefix(html: string, closer: RegExp): string {
  let end = 0;
  for (const m of html.matchAll(closer)) end = m.index! + m[0].length;
  return html.slice(0, end);
}

/** One line of readable text: tags stripped, entities decoded, control characters and lone surrogates dropped, whitespace collapsed. */
export function cleanText(value: unknown, max: number, keepLines = false): string | null {
  if (typeof value !== 'string') return null;
  const withBreaks = value.replace(/<br\s*\/?>/gi, '\n').replace(/<\/p>/gi, '\n');
  // Tags are stripped only up to the last '>' (see closedPrefix: a run of '<' without one was quadratic).
  const end = withBreaks.lastIndexOf('>') + 1;
  let text = decodeEntities(withBreaks.slice(0, end).replace(/<[^>]*>/g, ' ') + withBreaks.slice(end));
  text = text
    .replace(/[\uD800-\uDFFF]/gu, '')
    .replace(/\p{Cf}/gu, '')
    .replace(/\p{Cc}/gu, (c) => (keepLines && c === '\n' ? '\n' : ' '));
  text = keepLines
    ? text
        .split('\n')
        .map((l) => l.replace(/\s+/g, ' ').trim())
        .filter(Boolean)
        .join('\n')
    : text.replace(/\s+/g, ' ').trim();
  if (!text) return null;
  return text.length > max ? text.slice(0, max - 1).trimEnd() + '…' : text;
}

/** An absolute http(s) URL (resolved against the page), or null. */
export function cleanUrl(value: unknown, base: string): string | null {
  if (typeof value !== 'string') return null;
  try {
    const url = new URL(decodeEntities(value.trim()), base);
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) return null;
    const text = url.toString();
    return text.length <= LIMITS.url ? text : null;
  } catch {
    return null;
  }
}

/** The attributes of one tag, lower-case names, entity-decoded values. */
function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  // The value is optional so that a name without one (`async`, or 2 MB of letters) is consumed
  // whole: a required `=` made every later letter of a long name a new, failing start (quadratic).
  for (const m of tag.matchAll(/([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
    if (m[2] === undefined && m[3] === undefined && m[4] === undefined) continue;
    out[m[1].toLowerCase()] ??= decodeEntities(m[2] ?? m[3] ?? m[4]);
  }
  return out;
}

/** meta tags by property/name (first value wins), lower-case keys. */
export function metaTags(html: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of closedPrefix(html, />/g).matchAll(/<meta\b[^>]*>/gi)) {
    const attrs = attributes(m[0]);
    const key = (attrs.property ?? attrs.name ?? attrs.itemprop)?.toLowerCase();
    if (key && attrs.content !== undefined && !found.has(key)) found.set(key, attrs.content);
  }
  return found;
}

/** The JSON-LD objects of the page, flattened (arrays and @graph unpacked). */
export function jsonLd(html: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const visit = (node: unknown, depth: number) => {
    if (depth > 4 || out.length > 50) return;
    if (Array.isArray(node)) node.forEach((n) => visit(n, depth + 1));
    else if (node && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      out.push(obj);
      if (Array.isArray(obj['@graph'])) visit(obj['@graph'], depth + 1);
    }
  };
  for (const m of closedPrefix(html, /<\/script\s*>/gi).matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)) {
    if (!/application\/ld\+json/i.test(attributes(`<x ${m[1]}>`).type ?? '')) continue;
    try {
      visit(JSON.parse(m[2].trim().replace(/^<!--|-->$/g, '')), 0);
    } catch {
      // A broken block is skipped; the other sources still count.
    }
  }
  return out;
}

const MODEL_TYPES = ['3dmodel', 'product', 'creativework', 'visualartwork', 'thing', 'webpage', 'itempage'];

function typesOf(obj: Record<string, unknown>): string[] {
  const t = obj['@type'];
  // A few types at most: a page's list of 500 000 went into Math.min(...) below and overflowed the stack.
  return (Array.isArray(t) ? t.slice(0, 20) : [t]).filter((x): x is string => typeof x === 'string').map((x) => x.toLowerCase());
}

/** The JSON-LD object that describes the model: the most specific type first. */
function modelObject(objects: Record<string, unknown>[]): Record<string, unknown> | null {
  let best: Record<string, unknown> | null = null;
  let bestRank = Infinity;
  for (const obj of objects) {
    const rank = Math.min(...typesOf(obj).map((t) => (MODEL_TYPES.includes(t) ? MODEL_TYPES.indexOf(t) : Infinity)));
    if (rank < bestRank && (typeof obj.name === 'string' || typeof obj.headline === 'string')) {
      best = obj;
      bestRank = rank;
    }
  }
  return best;
}

/** "Jane", {name:"Jane"}, [{name:"Jane"}] -> "Jane". */
function personName(value: unknown, depth = 0): string | null {
  // Nested lists are followed a few levels only: a page's 200 000-deep one overflowed the stack.
  if (depth > 4) return null;
  if (typeof value === 'string') return cleanText(value, LIMITS.creator);
  if (Array.isArray(value)) {
    for (const v of value) {
      const n = personName(v, depth + 1);
      if (n) return n;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return cleanText(o.name ?? o.alternateName ?? o.identifier, LIMITS.creator);
  }
  return null;
}

/** "url", {url}, {contentUrl}, [..] -> the first image URL. */
function imageUrl(value: unknown, base: string, depth = 0): string | null {
  // Nested lists are followed a few levels only (as personName).
  if (depth > 4) return null;
  if (typeof value === 'string') return cleanUrl(value, base);
  if (Array.isArray(value)) {
    for (const v of value) {
      const u = imageUrl(v, base, depth + 1);
      if (u) return u;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return cleanUrl(o.url ?? o.contentUrl ?? o.thumbnailUrl, base);
  }
  return null;
}

const FORMAT_OF_MIME: Record<string, string> = {
  'model/stl': 'STL',
  'application/sla': 'STL',
  'model/3mf': '3MF',
  'application/vnd.ms-package.3dmanufacturing-3dmodel+xml': '3MF',
  'model/obj': 'OBJ',
  'model/step': 'STEP',
  'text/x.gcode': 'GCODE',
};
const KNOWN_EXTENSIONS = new Set(['STL', '3MF', 'OBJ', 'STEP', 'STP', 'GCODE', 'BGCODE', 'F3D', 'SCAD', 'BLEND', 'FBX', 'PLY', 'AMF', 'ZIP']);

function formatOf(name: string | null, encoding: unknown): string | null {
  if (typeof encoding === 'string') {
    const e = encoding.trim().toLowerCase();
    if (FORMAT_OF_MIME[e]) return FORMAT_OF_MIME[e];
    const bare = e.replace(/^\./, '').toUpperCase();
    if (KNOWN_EXTENSIONS.has(bare)) return bare;
  }
  const ext = name?.match(/\.([a-z0-9]{1,8})$/i)?.[1].toUpperCase();
  return ext && KNOWN_EXTENSIONS.has(ext) ? ext : null;
}

/** File information from JSON-LD `encoding` / `associatedMedia` / `distribution` / `hasPart` entries. */
function fileInfo(obj: Record<string, unknown> | null): FileInfo | null {
  if (!obj) return null;
  const files: ModelFile[] = [];
  for (const key of ['encoding', 'associatedMedia', 'distribution', 'hasPart']) {
    const list = Array.isArray(obj[key]) ? (obj[key] as unknown[]) : obj[key] ? [obj[key]] : [];
    for (const entry of list) {
      if (!entry || typeof entry !== 'object' || files.length >= LIMITS.files) continue;
      const e = entry as Record<string, unknown>;
      const fromUrl = typeof e.contentUrl === 'string' ? decodeURIComponentSafe(e.contentUrl.split(/[?#]/)[0].split('/').pop() ?? '') : null;
      const name = cleanText(e.name ?? fromUrl, LIMITS.fileName);
      const format = formatOf(name, e.encodingFormat ?? e.fileFormat);
      if (!name && !format) continue;
      const size = e.contentSize;
      files.push({ name: name ?? `file.${(format ?? 'bin').toLowerCase()}`, format, size: typeof size === 'string' || typeof size === 'number' ? cleanText(String(size), 50) : null });
    }
  }
  const countField = obj.numberOfItems ?? obj.fileCount;
  const declared = typeof countField === 'number' && Number.isInteger(countField) && countField >= 0 ? countField : null;
  if (files.length === 0 && declared === null) return null;
  const formats = [...new Set(files.map((f) => f.format).filter((f): f is string => !!f))];
  return { file_count: declared ?? files.length, formats, files };
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Everything the page says about the model; null fields where it says nothing usable. */
export function extractMetadata(html: string, pageUrl: string): PageMetadata {
  const meta = metaTags(html);
  const model = modelObject(jsonLd(html));
  const titleTag = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(closedPrefix(html, /<\/title\s*>/gi))?.[1];
  const m = (key: string) => meta.get(key);
  return {
    title: cleanText(model?.name ?? model?.headline, LIMITS.title) ?? cleanText(m('og:title'), LIMITS.title) ?? cleanText(m('twitter:title'), LIMITS.title) ?? cleanText(titleTag, LIMITS.title),
    creator_name:
      personName(model?.author) ??
      personName(model?.creator) ??
      personName(model?.brand) ??
      cleanText(m('author') ?? m('article:author') ?? m('twitter:creator'), LIMITS.creator),
    description:
      cleanText(model?.description, LIMITS.description, true) ?? cleanText(m('og:description'), LIMITS.description, true) ?? cleanText(m('description') ?? m('twitter:description'), LIMITS.description, true),
    thumbnail_url: imageUrl(model?.image, pageUrl) ?? imageUrl(model?.thumbnailUrl, pageUrl) ?? cleanUrl(m('og:image') ?? m('og:image:url') ?? m('og:image:secure_url') ?? m('twitter:image'), pageUrl),
    file_info: fileInfo(model),
  };
}
