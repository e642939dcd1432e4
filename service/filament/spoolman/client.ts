/**
 * The few Spoolman routes Printfarm uses (Donkie/Spoolman `/api/v1`): list
 * and read spools, and report usage with `PUT /spool/{id}/use`
 * `{"use_weight": grams}` (never `use_length` with it: both is a 400).
 * Every answer is bounded in time and size; Spoolman is a peer on the LAN,
 * not trusted further than that.
 */
import { readBodyUpTo } from '../../util/read-body';

export interface SpoolmanSpool {
  id: number;
  registered: string | null;
  first_used: string | null;
  last_used: string | null;
  price: number | null;
  initial_weight: number | null;
  spool_weight: number | null;
  remaining_weight: number | null;
  used_weight: number;
  location: string | null;
  archived: boolean;
  filament: {
    name: string | null;
    material: string | null;
    color_hex: string | null;
    density: number | null;
    diameter: number | null;
    weight: number | null;
    price: number | null;
    vendor: string | null;
  };
}

export class SpoolmanError extends Error {
  constructor(
    message: string,
    /** The HTTP status Spoolman answered with; null when it could not be reached (or answered no HTTP). */
    readonly status: number | null,
  ) {
    super(message);
  }
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** The most spools one poll takes, and the most the inventory holds between polls (what the change feed adds). */
export const MAX_SPOOLS = 10_000;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown, max = 200): string | null => (typeof v === 'string' ? v.slice(0, max) : null);
const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** One spool of Spoolman's answer, checked field by field (null for what is missing or of the wrong type). */
export function parseSpool(raw: unknown): SpoolmanSpool | null {
  const s = obj(raw);
  const id = num(s.id);
  if (id === null || !Number.isInteger(id) || id < 1) return null;
  const f = obj(s.filament);
  return {
    id,
    registered: str(s.registered, 40),
    first_used: str(s.first_used, 40),
    last_used: str(s.last_used, 40),
    price: num(s.price),
    initial_weight: num(s.initial_weight),
    spool_weight: num(s.spool_weight),
    remaining_weight: num(s.remaining_weight),
    used_weight: num(s.used_weight) ?? 0,
    location: str(s.location),
    archived: s.archived === true,
    filament: {
      name: str(f.name),
      material: str(f.material, 50),
      color_hex: str(f.color_hex, 16),
      density: num(f.density),
      diameter: num(f.diameter),
      weight: num(f.weight),
      price: num(f.price),
      vendor: str(obj(f.vendor).name),
    },
  };
}

/**
 * A base URL's user and password as a Basic authorization header, and the URL without them: fetch refuses
 * URLs with credentials, and its error then quoted the whole URL, password included, into logs and answers.
 */
export function splitCredentials(baseUrl: string): { url: string; authorization: string | null } {
  if (!URL.canParse(baseUrl)) return { url: baseUrl, authorization: null };
  const url = new URL(baseUrl);
  if (!url.username && !url.password) return { url: baseUrl, authorization: null };
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = '';
  url.password = '';
  return { url: url.toString(), authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

export class SpoolmanClient {
  private readonly baseUrl: string;
  private readonly authorization: string | null;

  constructor(
    baseUrl: string,
    private readonly timeoutMs = 5000,
  ) {
    ({ url: this.baseUrl, authorization: this.authorization } = splitCredentials(baseUrl));
  }

  private async request(method: 'GET' | 'PUT' | 'PATCH', path: string, body?: unknown): Promise<unknown> {
    const url = new URL(`api/v1/${path}`, this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    const headers: Record<string, string> = body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' };
    if (this.authorization) headers.authorization = this.authorization;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      throw new SpoolmanError(`Spoolman at ${url.origin} cannot be reached: ${(err as Error).message}`, null);
    }
    const length = Number(res.headers.get('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) {
      await res.body?.cancel();
      throw new SpoolmanError(`Spoolman answered ${length} bytes (at most ${MAX_BODY_BYTES})`, res.status);
    }
    // A body cut short or timed out is undici's own error (TypeError "terminated"): said here as Spoolman's.
    const text = await readBounded(res).catch((err: Error) => {
      throw err instanceof SpoolmanError ? err : new SpoolmanError(`Spoolman's answer to ${method} /api/v1/${path} was cut off: ${err.message}`, null);
    });
    if (!res.ok) throw new SpoolmanError(`Spoolman answered ${res.status} to ${method} /api/v1/${path}: ${text.slice(0, 200)}`, res.status);
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      throw new SpoolmanError(`Spoolman answered no JSON to ${method} /api/v1/${path}`, res.status);
    }
  }

  /** Every spool, archived ones too. */
  async spools(): Promise<SpoolmanSpool[]> {
    const body = await this.request('GET', 'spool?allow_archived=true');
    if (!Array.isArray(body)) throw new SpoolmanError('Spoolman answered no list of spools', 200);
    return body.slice(0, MAX_SPOOLS).map(parseSpool).filter((s): s is SpoolmanSpool => s !== null);
  }

  async spool(id: number): Promise<SpoolmanSpool> {
    const s = parseSpool(await this.request('GET', `spool/${id}`));
    if (!s) throw new SpoolmanError(`Spoolman answered no spool for ${id}`, 200);
    return s;
  }

  /** Sets the spool's location (where Printfarm loaded it). */
  async locate(id: number, location: string): Promise<void> {
    await this.request('PATCH', `spool/${id}`, { location: location.slice(0, 64) });
  }

  /** Takes `grams` off the spool; the spool as it is afterwards. */
  async use(id: number, grams: number): Promise<SpoolmanSpool | null> {
    return parseSpool(await this.request('PUT', `spool/${id}/use`, { use_weight: grams }));
  }
}

async function readBounded(res: Response): Promise<string> {
  const body = await readBodyUpTo(res, MAX_BODY_BYTES, () => new SpoolmanError(`Spoolman answered more than ${MAX_BODY_BYTES} bytes`, res.status));
  return body.toString('utf8');
}
