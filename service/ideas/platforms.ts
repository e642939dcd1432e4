/**
 * The five model-sharing platforms an idea can be imported from, and the
 * recognition of their model URLs. A URL is accepted only when its host is
 * exactly one of the platforms' hosts and its path is one of their model page
 * shapes; everything the service later fetches is a canonical URL built here
 * from the recognised platform and model id, never the text a user sent.
 */

export const IMPORT_PLATFORMS = ['makerworld', 'printables', 'thingiverse', 'myminifactory', 'cults3d'] as const;
/** `manual` marks an entry made by hand. */
export const IDEA_PLATFORMS = [...IMPORT_PLATFORMS, 'manual'] as const;
/** Platforms with a trending list (lower-case path segments of /ideas/trending/{platform}). */
export const TRENDING_PLATFORMS = ['makerworld', 'printables'] as const;

export type ImportPlatform = (typeof IMPORT_PLATFORMS)[number];
export type IdeaPlatform = (typeof IDEA_PLATFORMS)[number];
export type TrendingPlatform = (typeof TRENDING_PLATFORMS)[number];

export const PLATFORM_NAMES: Record<IdeaPlatform, string> = {
  makerworld: 'MakerWorld',
  printables: 'Printables',
  thingiverse: 'Thingiverse',
  myminifactory: 'MyMiniFactory',
  cults3d: 'Cults3D',
  manual: 'Manual',
};

/** The hosts of each platform (exact names: no other subdomain, no lookalike). */
export const PLATFORM_HOSTS: Record<ImportPlatform, readonly string[]> = {
  makerworld: ['makerworld.com', 'www.makerworld.com'],
  printables: ['www.printables.com', 'printables.com'],
  thingiverse: ['www.thingiverse.com', 'thingiverse.com'],
  myminifactory: ['www.myminifactory.com', 'myminifactory.com'],
  cults3d: ['cults3d.com', 'www.cults3d.com'],
};

/** Every host the service may ever fetch a page from. */
export const FETCHABLE_HOSTS: ReadonlySet<string> = new Set(Object.values(PLATFORM_HOSTS).flat());

export const MAX_URL_LENGTH = 2048;

export interface RecognisedModel {
  platform: ImportPlatform;
  /** The platform's model id: digits, or the model's slug on Cults3D. */
  model_id: string;
  /** The readable part of the URL, when it has one (used for a title without network). */
  slug: string | null;
  /** The page the service fetches and stores: https, the platform's main host, no query string. */
  canonical_url: string;
  /** A title made from the slug (or "<Platform> model <id>"). */
  title_hint: string;
}

export type Recognition = { ok: true; model: RecognisedModel } | { ok: false; reason: string };

const LOCALE = '(?:[a-z]{2}(?:[-_][a-z]{2,4})?/)?';
/** A readable slug segment as it appears after an id ("-some-name"). */
const SLUG = '([^/?#]*)';

/** Cults3D's "3d-model" path segment in its site languages. */
const CULTS_MODEL_SEGMENTS = new Set(['3d-model', 'modele-3d', 'modèle-3d', 'modelo-3d', 'modello-3d', '3d-modell', 'modell-3d', '3d-modelo']);

type Matcher = (path: string) => Omit<RecognisedModel, 'platform' | 'title_hint'> | null;

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const MATCHERS: Record<ImportPlatform, Matcher> = {
  // https://makerworld.com/en/models/123456-some-slug?from=search#profileId-1
  makerworld(path) {
    const m = new RegExp(`^/${LOCALE}models/(\\d{1,12})(?:-${SLUG})?/?$`, 'i').exec(path);
    if (!m) return null;
    return { model_id: m[1], slug: m[2] || null, canonical_url: `https://makerworld.com/en/models/${m[1]}` };
  },
  // https://www.printables.com/model/123456-slug, /de/model/123456, /model/123456-slug/files
  printables(path) {
    const m = new RegExp(`^/${LOCALE}model/(\\d{1,12})(?:-${SLUG})?(?:/[^?#]*)?$`, 'i').exec(path);
    if (!m) return null;
    return { model_id: m[1], slug: m[2] || null, canonical_url: `https://www.printables.com/model/${m[1]}` };
  },
  // https://www.thingiverse.com/thing:123456, /thing:123456/files
  thingiverse(path) {
    const m = /^\/thing:(\d{1,12})(?:\/[^?#]*)?$/i.exec(path);
    if (!m) return null;
    return { model_id: m[1], slug: null, canonical_url: `https://www.thingiverse.com/thing:${m[1]}` };
  },
  // https://www.myminifactory.com/object/3d-print-some-name-123456 (also /de/object/..., /object/123456)
  myminifactory(path) {
    const m = new RegExp(`^/${LOCALE}object/((?:[a-z0-9][a-z0-9-]*-)?(\\d{1,12}))/?$`, 'i').exec(path);
    if (!m) return null;
    const segment = m[1].toLowerCase();
    const readable = segment.slice(0, segment.length - m[2].length).replace(/-+$/, '').replace(/^3d-print-?/, '');
    return { model_id: m[2], slug: readable || null, canonical_url: `https://www.myminifactory.com/object/${segment}` };
  },
  // https://cults3d.com/en/3d-model/gadget/some-slug (the slug is the model id)
  cults3d(path) {
    const m = new RegExp(`^/${LOCALE}([^/]+)/([a-z0-9][a-z0-9-]{0,99})/([a-z0-9][a-z0-9_-]{0,199})/?$`, 'i').exec(path);
    if (!m || !CULTS_MODEL_SEGMENTS.has(decodeSegment(m[1]).toLowerCase())) return null;
    const category = m[2].toLowerCase();
    const slug = m[3].toLowerCase();
    return { model_id: slug, slug, canonical_url: `https://cults3d.com/en/3d-model/${category}/${slug}` };
  },
};

/** "some-cool_slug" -> "Some cool slug" (percent escapes decoded; null when nothing readable is left). */
export function titleFromSlug(slug: string | null): string | null {
  if (!slug) return null;
  const text = decodeSegment(slug)
    .replace(/[-_+]+/g, ' ')
    // Control and invisible characters never reach a title.
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  if (!/[\p{L}\p{N}]/u.test(text)) return null;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

export function platformOfHost(hostname: string): ImportPlatform | null {
  for (const platform of IMPORT_PLATFORMS) if (PLATFORM_HOSTS[platform].includes(hostname)) return platform;
  return null;
}

/**
 * Checks the parts of a URL that make it safe to name a platform page:
 * http(s), no credentials, a platform host (no IP literal), the default port.
 * Returns the platform, or why the URL is refused.
 */
export function checkHost(url: URL): { ok: true; platform: ImportPlatform } | { ok: false; reason: string } {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: `scheme "${url.protocol.replace(/:$/, '')}" is not allowed (http or https only)` };
  if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not allowed' };
  if (url.hostname.startsWith('[') || IPV4.test(url.hostname)) return { ok: false, reason: 'IP addresses are not allowed; give the platform page URL' };
  const platform = platformOfHost(url.hostname);
  if (!platform) return { ok: false, reason: `host "${url.hostname}" is not a supported platform (${IMPORT_PLATFORMS.join(', ')})` };
  // The URL parser drops default ports (443 for https, 80 for http), so any port left is a custom one.
  if (url.port !== '') return { ok: false, reason: `port ${url.port} is not allowed` };
  return { ok: true, platform };
}

/** Recognises the platform and model id of a model page URL. */
export function recogniseModelUrl(input: string): Recognition {
  if (typeof input !== 'string') return { ok: false, reason: 'must be a URL' };
  const text = input.trim();
  if (text.length === 0) return { ok: false, reason: 'must be a URL' };
  if (text.length > MAX_URL_LENGTH) return { ok: false, reason: `must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'is not a valid absolute URL' };
  }
  const host = checkHost(url);
  if (!host.ok) return host;
  const platform = host.platform;
  const found = MATCHERS[platform](url.pathname);
  if (!found) return { ok: false, reason: `is not a ${PLATFORM_NAMES[platform]} model page URL` };
  const title_hint = titleFromSlug(found.slug) ?? `${PLATFORM_NAMES[platform]} model ${found.model_id}`;
  return { ok: true, model: { platform, ...found, title_hint } };
}

/** The canonical page of a trending model, from its id (null when the id is not one of the platform's). */
export function trendingModelUrl(platform: TrendingPlatform, modelId: string): string | null {
  const r = recogniseModelUrl(platform === 'makerworld' ? `https://makerworld.com/en/models/${modelId}` : `https://www.printables.com/model/${modelId}`);
  return r.ok && r.model.model_id === modelId ? r.model.canonical_url : null;
}
