/**
 * A small, linear XML reader for the configs inside 3MF packages
 * (slice_info.config, model_settings.config, _rels/.rels, the model's head).
 *
 * Why not regular expressions: these files come from whoever uploads them, and
 * a lazy `<plate>([\s\S]*?)</plate>` over 150,000 unclosed `<plate>` tags is
 * quadratic (a 1 MiB file held the event loop for a minute). This reader
 * moves a cursor forward only (`indexOf` from the cursor, one pass over each
 * tag), so its work is proportional to the text; and it bounds what a
 * hostile file can make it hold: text length, nesting depth, element count
 * and attributes per element. Past a bound it throws
 * `PreviewError('TOO_LARGE')`.
 *
 * It is deliberately not a full XML parser: no DTD, no entity definitions
 * (only the five predefined entities and character references are decoded),
 * no namespaces. A document that ends inside a tag (a truncated head) simply
 * ends there.
 */
import { PreviewError } from './errors';

export interface XmlLimits {
  /** Longest text read, in UTF-16 units (default 16 Mi). */
  maxChars?: number;
  /** Deepest element nesting (default 64). */
  maxDepth?: number;
  /** Most elements (default 200,000). */
  maxElements?: number;
  /** Most attributes on one element (default 256). */
  maxAttributes?: number;
}

export interface XmlElement {
  /** The tag name as written (`plate`, `metadata`). */
  name: string;
  attributes: Record<string, string>;
  /** 0 for the root element. */
  depth: number;
}

export interface XmlHandler {
  /** An element starts; `selfClosing` for `<x/>` (no `close` follows). */
  open?(element: XmlElement, selfClosing: boolean): void;
  /** An element ends (`</x>`), with the name of the element it closes. */
  close?(name: string, depth: number): void;
  /** Character data (decoded) between tags, CDATA included. */
  text?(text: string, depth: number): void;
}

export const XML_DEFAULTS: Required<XmlLimits> = { maxChars: 16 << 20, maxDepth: 64, maxElements: 200_000, maxAttributes: 256 };

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Walks `xml` once, calling `handler` for each element and text run. Throws TOO_LARGE past a limit. */
export function scanXml(xml: string, handler: XmlHandler, limits: XmlLimits = {}): void {
  const lim = { ...XML_DEFAULTS, ...limits };
  if (xml.length > lim.maxChars) throw new PreviewError('TOO_LARGE', `XML text of ${xml.length} characters exceeds ${lim.maxChars}`);
  const stack: string[] = [];
  let elements = 0;
  let pos = 0;
  const n = xml.length;
  while (pos < n) {
    const lt = xml.indexOf('<', pos);
    const textEnd = lt < 0 ? n : lt;
    if (textEnd > pos && handler.text) handler.text(xmlDecode(xml.slice(pos, textEnd)), stack.length);
    if (lt < 0) return;
    if (xml.startsWith('<!--', lt)) {
      const end = xml.indexOf('-->', lt + 4);
      if (end < 0) return;
      pos = end + 3;
    } else if (xml.startsWith('<![CDATA[', lt)) {
      const end = xml.indexOf(']]>', lt + 9);
      if (end < 0) return;
      if (handler.text) handler.text(xml.slice(lt + 9, end), stack.length);
      pos = end + 3;
    } else if (xml.startsWith('<?', lt) || xml.startsWith('<!', lt)) {
      const end = xml.indexOf('>', lt + 2);
      if (end < 0) return;
      pos = end + 1;
    } else if (xml.startsWith('</', lt)) {
      const end = xml.indexOf('>', lt + 2);
      if (end < 0) return;
      const name = xml.slice(lt + 2, end).trim();
      // Close the innermost open element of that name (a stray close tag is ignored).
      const at = stack.lastIndexOf(name);
      if (at >= 0) {
        while (stack.length > at + 1) handler.close?.(stack.pop()!, stack.length);
        stack.pop();
        handler.close?.(name, stack.length);
      }
      pos = end + 1;
    } else {
      const tag = readTag(xml, lt + 1, lim.maxAttributes);
      if (!tag) return;
      pos = tag.end;
      if (!tag.name) continue;
      if (++elements > lim.maxElements) throw new PreviewError('TOO_LARGE', `XML has more than ${lim.maxElements} elements`);
      handler.open?.({ name: tag.name, attributes: tag.attributes, depth: stack.length }, tag.selfClosing);
      if (!tag.selfClosing) {
        if (stack.length >= lim.maxDepth) throw new PreviewError('TOO_LARGE', `XML elements nest deeper than ${lim.maxDepth}`);
        stack.push(tag.name);
      }
    }
  }
}

interface Tag {
  name: string;
  attributes: Record<string, string>;
  selfClosing: boolean;
  /** Index just past the tag's `>`. */
  end: number;
}

/** One start tag from just after its `<`; null when the text ends inside it. Each character is read once. */
function readTag(xml: string, from: number, maxAttributes: number): Tag | null {
  const n = xml.length;
  let i = from;
  while (i < n && !isSpace(xml.charCodeAt(i)) && xml[i] !== '>' && xml[i] !== '/') i++;
  const name = xml.slice(from, i);
  const attributes: Record<string, string> = Object.create(null);
  let count = 0;
  while (i < n) {
    const c = xml[i];
    if (isSpace(xml.charCodeAt(i))) {
      i++;
    } else if (c === '>') {
      return { name, attributes, selfClosing: false, end: i + 1 };
    } else if (c === '/' && xml[i + 1] === '>') {
      return { name, attributes, selfClosing: true, end: i + 2 };
    } else {
      const nameStart = i;
      while (i < n && !isSpace(xml.charCodeAt(i)) && xml[i] !== '=' && xml[i] !== '>' && xml[i] !== '/') i++;
      const attr = xml.slice(nameStart, i);
      while (i < n && isSpace(xml.charCodeAt(i))) i++;
      if (xml[i] !== '=') {
        // A bare word or a stray "/": not well-formed; skip it (the cursor has moved on).
        if (i === nameStart) i++;
        continue;
      }
      i++;
      while (i < n && isSpace(xml.charCodeAt(i))) i++;
      const quote = xml[i];
      if (quote !== '"' && quote !== "'") continue;
      const close = xml.indexOf(quote, i + 1);
      if (close < 0) return null;
      if (++count > maxAttributes) throw new PreviewError('TOO_LARGE', `XML element <${name.slice(0, 40)}> has more than ${maxAttributes} attributes`);
      if (attr && !(attr in attributes)) attributes[attr] = xmlDecode(xml.slice(i + 1, close));
      i = close + 1;
    }
  }
  return null;
}

const NAMED = new Map([['lt', '<'], ['gt', '>'], ['amp', '&'], ['quot', '"'], ['apos', "'"]]);

/** Decodes the predefined entities and character references; anything else is left as written. */
export function xmlDecode(s: string): string {
  if (!s.includes('&')) return s;
  let out = '';
  let pos = 0;
  for (;;) {
    const amp = s.indexOf('&', pos);
    if (amp < 0) break;
    // An entity is short: look no further than 12 characters for its ";" (a far one would make this quadratic).
    const near = s.slice(amp + 1, amp + 13).indexOf(';');
    const semi = near < 0 ? -1 : amp + 1 + near;
    const ref = semi < 0 ? null : s.slice(amp + 1, semi);
    const decoded = ref === null ? null : decodeRef(ref);
    out += s.slice(pos, amp) + (decoded ?? '&');
    pos = decoded === null ? amp + 1 : semi + 1;
  }
  return out + s.slice(pos);
}

function decodeRef(ref: string): string | null {
  const named = NAMED.get(ref.toLowerCase());
  if (named !== undefined) return named;
  if (ref[0] !== '#') return null;
  const hex = ref[1] === 'x' || ref[1] === 'X';
  const digits = ref.slice(hex ? 2 : 1);
  if (!digits || !(hex ? /^[0-9a-f]+$/i : /^[0-9]+$/).test(digits)) return null;
  const code = parseInt(digits, hex ? 16 : 10);
  return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : '';
}
