/**
 * API tokens for the optional access control. Two sources: `AUTH_TOKENS` (role:token pairs from the
 * environment) and tokens made with `printfarm token create`, kept in DATA_DIR/tokens.json as SHA-256
 * hashes only (the token itself is shown once, when it is made). A file, not a table: the CLI can write
 * it while no service runs, and a lost file only means new tokens. With no token anywhere, access
 * control is off and the API is open as the spec says.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const TOKENS_FILE = 'tokens.json';

interface StoredToken {
  id: string;
  role: Role;
  name: string;
  /** "sha256:<hex>" of the token. */
  hash: string;
  created_at: string;
}

const hashOf = (token: string) => `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;

/** `AUTH_TOKENS`: "admin:secret1, viewer:secret2" (a bare token is an admin's). */
export function parseAuthTokens(text: string): { role: Role; token: string }[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(':');
      const role = colon > 0 ? entry.slice(0, colon) : 'admin';
      const token = colon > 0 ? entry.slice(colon + 1) : entry;
      if (!(ROLES as readonly string[]).includes(role)) throw new Error(`AUTH_TOKENS: unknown role "${role}" (viewer, operator or admin)`);
      if (token.length < 16) throw new Error('AUTH_TOKENS: a token must have at least 16 characters');
      return { role: role as Role, token };
    });
}

/**
 * The stored tokens. An entry that is no token (a role spelt "Admin", a hash cut short) throws rather than
 * being skipped: skipped, a file of such entries turned access control off and opened the API, while
 * `npm start` (which counts the entries) still locked the editor as if it were on.
 */
function readFile(file: string): StoredToken[] {
  if (!fs.existsSync(file)) return [];
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { tokens?: unknown } | null;
  const tokens = parsed?.tokens ?? [];
  if (!Array.isArray(tokens)) throw new Error(`${TOKENS_FILE}: "tokens" must be a list`);
  tokens.forEach((t: Partial<StoredToken> | null, i) => {
    if (!(ROLES as readonly string[]).includes(String(t?.role)) || !/^sha256:[0-9a-f]{64}$/.test(String(t?.hash))) {
      throw new Error(`${TOKENS_FILE}: entry ${i + 1} is no token (role viewer, operator or admin and a "sha256:<64 hex>" hash)`);
    }
  });
  return tokens as StoredToken[];
}

/** Makes a token, stores its hash in DATA_DIR/tokens.json (mode 0600) and returns the token: the only time it is seen. */
export function createToken(dataDir: string, role: Role, name = ''): { id: string; role: Role; token: string } {
  const file = path.join(dataDir, TOKENS_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  const token = `pf_${randomBytes(24).toString('base64url')}`;
  const id = randomBytes(6).toString('hex');
  const tokens = [...readFile(file), { id, role, name, hash: hashOf(token), created_at: new Date().toISOString() }];
  const temp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(temp, JSON.stringify({ tokens }, null, 2), { mode: 0o600 });
  fs.renameSync(temp, file);
  return { id, role, token };
}

/** Who a bearer token belongs to. The file is read again when it changes, so new tokens work without a restart. */
export class TokenRegistry {
  private readonly fromEnv: { role: Role; hash: Buffer }[];
  private fileTokens: StoredToken[] = [];
  private fileStamp = '';
  private readonly file: string;
  private readonly listeners = new Set<() => void>();
  private watching = false;
  private readonly onFileStat = () => this.reload();

  constructor(dataDir: string, authTokens: string) {
    this.file = path.join(dataDir, TOKENS_FILE);
    this.fromEnv = parseAuthTokens(authTokens).map((t) => ({ role: t.role, hash: Buffer.from(hashOf(t.token)) }));
    // At start a broken file stops the service (throws) rather than leaving the API open.
    this.fileTokens = readFile(this.file);
    this.fileStamp = this.stamp();
  }

  private stamp(): string {
    try {
      // Asked by every request with a token: no exception for the usual missing file.
      const st = fs.statSync(this.file, { throwIfNoEntry: false });
      return st ? `${st.mtimeMs}:${st.size}` : 'none';
    } catch {
      return 'none';
    }
  }

  /** Access control is on when any token exists. */
  get enabled(): boolean {
    this.reload();
    return this.fromEnv.length > 0 || this.fileTokens.length > 0;
  }

  roleOf(token: string): Role | null {
    this.reload();
    const hash = Buffer.from(hashOf(token));
    // Constant-time comparison of hashes of equal length.
    for (const t of this.fromEnv) if (timingSafeEqual(t.hash, hash)) return t.role;
    for (const t of this.fileTokens) if (t.hash.length === hash.length && timingSafeEqual(Buffer.from(t.hash), hash)) return t.role;
    return null;
  }

  /**
   * Calls `listener` after the stored tokens changed (one removed, added, or given another role in
   * tokens.json), so that what was admitted under the old ones (an open /ws connection) can be judged
   * again. Requests notice a change at once; while anyone listens the file is also looked at every
   * `everyMs`, since a connection that was let in sends no more requests. Returns the unsubscribe.
   * The look is fs.watchFile's: a stat on libuv's thread pool (not a statSync on the event loop every
   * second, beside the printers' reports), a missing file included, and no JavaScript timer to keep the
   * process alive or to fire 86 400 times a simulated day under a test's fake clock.
   */
  onChange(listener: () => void, everyMs = 1000): () => void {
    this.listeners.add(listener);
    if (!this.watching) {
      fs.watchFile(this.file, { interval: everyMs, persistent: false }, this.onFileStat);
      this.watching = true;
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0 || !this.watching) return;
      fs.unwatchFile(this.file, this.onFileStat);
      this.watching = false;
    };
  }

  private reload(): void {
    const stamp = this.stamp();
    if (stamp === this.fileStamp) return;
    this.fileStamp = stamp;
    const before = signature(this.fileTokens);
    try {
      this.fileTokens = readFile(this.file);
    } catch {
      // A broken file must not open the API: keep what was known.
    }
    if (signature(this.fileTokens) === before) return;
    // After the caller (a request's roleOf) is done: a listener asks roleOf again.
    for (const listener of this.listeners) queueMicrotask(listener);
  }
}

/** What decides who is let in: each token's hash and role. */
function signature(tokens: StoredToken[]): string {
  return tokens.map((t) => `${t.role}:${t.hash}`).join(',');
}
