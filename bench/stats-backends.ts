/**
 * The two databases bench/stats measures: each a running service on its own database, a way to
 * grow the farm's history to a size (bench/stats-data.ts, written by the database itself), and the
 * baseline: the very SQL the service runs, sent straight to the database on a connection of the
 * bench's own (better-sqlite3 with statements prepared once; a `pg` client).
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { CompiledQuery } from 'kysely';
import pg from 'pg';
import { createService, type Service } from '../service/app';
import { DB_FILENAME } from '../service/db';
import { DriverError, type DriverConfig, type PrinterDriver } from '../service/printers/driver';
import { startPostgres, type PostgresServer } from '../test/support/postgres-server';
import { addJobs, addJobsPostgres, seedFleet, seedFleetPostgres } from './stats-data';

export const TIME_ZONE = 'Europe/Berlin';

/** A printer that is never reached: the bench measures the database, not the network. */
export class InertDriver extends EventEmitter implements PrinterDriver {
  readonly state = null;
  readonly connection = 'disconnected' as const;
  constructor(readonly config: DriverConfig) {
    super();
  }
  connect = () => new Promise<void>(() => {});
  close = async () => {};
  private none = async (): Promise<never> => {
    throw new DriverError('OFFLINE', 'bench');
  };
  listFiles = this.none;
  download = this.none;
  pause = this.none;
  resume = this.none;
  stop = this.none;
  startPrint = this.none;
}

export interface StatsBackend {
  name: 'SQLite' | 'PostgreSQL';
  service: Service;
  /** Adds jobs until the farm holds `size`; `progress` hears the jobs written so far. Returns the database's bytes. */
  grow(size: number, progress: (jobs: number) => void): Promise<number>;
  /** Runs `queries` one after another as the baseline; the time of the statements alone, and the rows of the first. */
  raw(queries: CompiledQuery[]): Promise<{ ms: number; firstRows: Record<string, unknown>[] }>;
  close(): Promise<void>;
}

const startOn = async (dataDir: string, databaseUrl?: string): Promise<Service> => {
  const service = await createService({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    databaseUrl,
    env: { TIMEZONE: TIME_ZONE },
    logLevel: 'silent',
    updateCheckUrl: 'http://127.0.0.1:9/unreachable',
    driverFactory: (_type, config) => new InertDriver(config),
  });
  // The raw baseline runs in this process and may block it for seconds: keep idle connections open across
  // that, or the server's 5 s keep-alive timeout races the next request (ECONNRESET).
  service.server.keepAliveTimeout = 10 * 60_000;
  return service;
};

const elapsedMs = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

export async function sqliteBackend(): Promise<StatsBackend> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-stats-'));
  const file = path.join(dataDir, DB_FILENAME);
  const service = await startOn(dataDir);
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  const statements = new Map<string, BetterSqlite3.Statement>();
  let have = 0;
  return {
    name: 'SQLite',
    service,
    async grow(size, progress) {
      // A connection of its own for writing: a large page cache and no fsync while seeding (the baseline's
      // connection keeps SQLite's defaults, like the service's read worker).
      const seed = new BetterSqlite3(file);
      try {
        seed.pragma('journal_mode = WAL');
        seed.pragma('synchronous = OFF');
        seed.pragma('cache_size = -524288');
        if (have === 0) seedFleet(seed);
        addJobs(seed, size - have, have, (done) => progress(have + done));
        // As a long-running service's automatic checkpoints would have: the jobs in the db file, not the WAL.
        seed.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        seed.close();
      }
      have = size;
      return fs.statSync(file).size;
    },
    async raw(queries) {
      const prepared = queries.map((q) => {
        let stmt = statements.get(q.sql);
        if (!stmt) statements.set(q.sql, (stmt = raw.prepare(q.sql)));
        return stmt;
      });
      let firstRows: Record<string, unknown>[] = [];
      const t = process.hrtime.bigint();
      prepared.forEach((stmt, i) => {
        const rows = stmt.all(...(queries[i].parameters as unknown[])) as Record<string, unknown>[];
        if (i === 0) firstRows = rows;
      });
      return { ms: elapsedMs(t), firstRows };
    },
    async close() {
      raw.close();
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** PostgreSQL: a throwaway server from the Debian binaries, or a fresh database on `adminUrl`'s server. */
export async function postgresBackend(adminUrl?: string): Promise<StatsBackend> {
  let server: PostgresServer | null = null;
  const admin = adminUrl ?? (server = await startPostgres()).adminUrl;
  const name = `bench_stats_${process.pid}`;
  const adminQuery = async (text: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await adminQuery(`DROP DATABASE IF EXISTS ${name}`);
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = Object.assign(new URL(admin), { pathname: `/${name}` }).toString();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-stats-pg-'));
  const service = await startOn(dataDir, url);
  // The service's connections speak UTC (service/db/connection.ts): so does the baseline's.
  const client = new pg.Client({ connectionString: url, options: '-c TimeZone=UTC' });
  await client.connect();
  let have = 0;
  return {
    name: 'PostgreSQL',
    service,
    async grow(size, progress) {
      if (have === 0) await seedFleetPostgres(client);
      await addJobsPostgres(client, size - have, have, (done) => progress(have + done));
      // What autovacuum does to a live database: statistics for the planner, the visibility map for index-only scans.
      await client.query('VACUUM ANALYZE');
      have = size;
      const { rows } = await client.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
      return Number(rows[0].bytes);
    },
    async raw(queries) {
      let firstRows: Record<string, unknown>[] = [];
      const t = process.hrtime.bigint();
      for (const [i, q] of queries.entries()) {
        const { rows } = await client.query(q.sql, q.parameters as unknown[]);
        if (i === 0) firstRows = rows;
      }
      return { ms: elapsedMs(t), firstRows };
    },
    async close() {
      await client.end();
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (server) await server.stop();
      else await adminQuery(`DROP DATABASE IF EXISTS ${name}`);
    },
  };
}
