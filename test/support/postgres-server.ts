/**
 * A throwaway PostgreSQL server for tests and benchmarks (no jest in here):
 * the Debian `postgresql` package's initdb and pg_ctl on a temp dir, a free
 * port on 127.0.0.1, the socket in the temp dir; no system service.
 *
 * initdb refuses to run as root: as root, the server runs as the package's
 * `postgres` user (runuser). `postgresUnavailable()` says why there is no
 * server here; with CI=true a missing server is an error instead.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** The newest /usr/lib/postgresql/<version>/bin holding pg_ctl, or PG_BIN. */
export function findPostgresBin(): string | null {
  if (process.env.PG_BIN && fs.existsSync(path.join(process.env.PG_BIN, 'pg_ctl'))) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0], 'bin') : null;
}

export const POSTGRES_BIN = findPostgresBin();
const IN_CI = /^(1|true)$/i.test(process.env.CI ?? '');

/** Why PostgreSQL tests cannot run here, or null when they can. In CI, a missing server fails instead of skipping. */
export function postgresUnavailable(): string | null {
  if (POSTGRES_BIN) return null;
  const why = 'PostgreSQL binaries not found (install the Debian package postgresql, or set PG_BIN)';
  if (IN_CI) throw new Error(`${why}: CI=true requires the PostgreSQL tests to run`);
  return why;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface PostgresServer {
  port: number;
  /** A URL to a new, empty database on the server. */
  createDatabase(prefix?: string): Promise<string>;
  /** The URL of the server's `postgres` database (for administration). */
  adminUrl: string;
  stop(): Promise<void>;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a binary of the package, as `postgres` when we are root. */
function runPg(bin: string, args: string[], options: { timeoutMs?: number } = {}): void {
  const exe = path.join(POSTGRES_BIN!, bin);
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
  const result = spawnSync(cmd, argv, { encoding: 'utf8', timeout: options.timeoutMs ?? 60_000 });
  if (result.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed: ${result.stderr || result.stdout || result.error?.message}`);
}

/** Starts a server of its own; `stop()` ends it and removes its files. */
export async function startPostgres(): Promise<PostgresServer> {
  const reason = postgresUnavailable();
  if (reason) throw new Error(reason);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-pg-'));
  const data = path.join(dir, 'data');
  if (isRoot()) {
    // The postgres user must own the cluster and be able to reach it through the temp dir.
    fs.chmodSync(dir, 0o755);
    execFileSync('chown', ['postgres:', dir]);
  }
  runPg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '--locale=C', '-E', 'UTF8']);
  const port = await freePort();
  // fsync off and a small footprint: a throwaway test server, never a place for data that matters.
  const opts = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB`;
  runPg('pg_ctl', ['-D', data, '-o', opts, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let n = 0;
  return {
    port,
    adminUrl,
    async createDatabase(prefix = 'test') {
      const name = `${prefix}_${process.pid}_${++n}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      try {
        runPg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

