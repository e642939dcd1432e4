/** The storage layer: one connection and a repository per table. Nothing outside service/db/ writes SQL. */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { openDatabase, type Connection } from './connection';
import { PostgresReader, ReadWorker } from './read-worker';
import { FilamentUsageRepository } from './repositories/filament-usage';
import { FilesRepository } from './repositories/files';
import { IdeasRepository, TrendingRepository } from './repositories/ideas';
import { JobsRepository } from './repositories/jobs';
import { MaintenanceRepository } from './repositories/maintenance';
import { PrintersRepository } from './repositories/printers';
import { QueueRepository } from './repositories/queue';
import { SettingsRepository } from './repositories/settings';
import { SpoolsRepository } from './repositories/spools';
import { StatisticsRepository } from './repositories/statistics';
import { StatusHistoryRepository } from './repositories/status-history';
import { UsageRepository } from './repositories/usage';

export interface Store {
  connection: Connection;
  printers: PrintersRepository;
  jobs: JobsRepository;
  settings: SettingsRepository;
  files: FilesRepository;
  /** Printer status and connection changes (uptime). */
  statusHistory: StatusHistoryRepository;
  maintenance: MaintenanceRepository;
  /** Read-only aggregations for /statistics. */
  statistics: StatisticsRepository;
  /** Opt-in usage statistics: local counters and the opt-in state. */
  usage: UsageRepository;
  /** Ideas / bookmarks of models (service/ideas). */
  ideas: IdeasRepository;
  /** The trending cache (items per platform and their lifetime). */
  trending: TrendingRepository;
  /** The print queue: items and their dispatches. */
  queue: QueueRepository;
  /** Filament: the embedded spool inventory and the Spoolman slot map. */
  spools: SpoolsRepository;
  /** Filament: each print's plan, its usage per slot, the Spoolman outbox. */
  filamentUsage: FilamentUsageRepository;
  /**
   * A trivial query: true while the database answers and, on SQLite, its file is still the one opened (not
   * deleted or replaced); on PostgreSQL a `SELECT 1`.
   */
  ping(): Promise<boolean>;
  /** The bytes the database takes: SQLite's file with its -wal and -shm companions; PostgreSQL's database (pg_database_size). */
  sizeBytes(): Promise<number>;
  close(): Promise<void>;
}

export const DB_FILENAME = 'printfarm.db';

export interface StoreOptions {
  /** postgres://... : the service's tables live in this PostgreSQL database instead of `<dataDir>/printfarm.db`. */
  databaseUrl?: string;
  /** Connections of the PostgreSQL pool (default 10). */
  poolMax?: number;
}

export async function openStore(dataDir: string, options: StoreOptions = {}): Promise<Store> {
  const connection = await openDatabase({ file: path.join(dataDir, DB_FILENAME), url: options.databaseUrl, poolMax: options.poolMax });
  const { db } = connection;
  // SQLite: the file as opened; deleted or replaced underneath (a cleanup script, a restore) the service writes into a ghost.
  const opened = connection.dialect === 'sqlite' ? fs.statSync(connection.file) : null;
  const sameFile = () => {
    if (connection.dialect !== 'sqlite' || !opened) return true;
    try {
      const now = fs.statSync(connection.file);
      return now.ino === opened.ino && now.dev === opened.dev;
    } catch {
      return false;
    }
  };
  // Statistics over a large farm take seconds: on SQLite they run on their own connection in a worker thread,
  // on PostgreSQL on a pool of their own (the server does the work; the event loop only waits).
  const reader = connection.dialect === 'sqlite' ? new ReadWorker(connection.file) : new PostgresReader(connection.url);
  return {
    connection,
    printers: new PrintersRepository(db),
    jobs: new JobsRepository(db),
    settings: new SettingsRepository(db),
    files: new FilesRepository(db),
    statusHistory: new StatusHistoryRepository(db),
    maintenance: new MaintenanceRepository(db),
    statistics: new StatisticsRepository(db, reader),
    usage: new UsageRepository(db),
    ideas: new IdeasRepository(db),
    trending: new TrendingRepository(db),
    queue: new QueueRepository(db),
    spools: new SpoolsRepository(db),
    filamentUsage: new FilamentUsageRepository(db, reader),
    ping: async () => (await connection.ping()) && sameFile(),
    sizeBytes: async () => {
      if (connection.dialect === 'sqlite') return sqliteFileBytes(connection.file);
      const { rows } = await sql<{ bytes: string }>`select pg_database_size(current_database()) as bytes`.execute(db);
      return Number(rows[0]?.bytes ?? 0);
    },
    close: async () => {
      await reader.close();
      await connection.close();
    },
  };
}

function sqliteFileBytes(file: string): number {
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += fs.statSync(file + suffix).size;
    } catch {
      // The -wal and -shm files come and go with checkpoints.
    }
  }
  return total;
}
