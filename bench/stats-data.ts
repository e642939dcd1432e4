/**
 * bench/stats's data: 8 active printers, 2000 catalogued files and jobs spread evenly over the
 * last 730 days, written straight into the service's SQLite file, from a seeded generator so
 * that every run measures the same data.
 */
import type BetterSqlite3 from 'better-sqlite3';

const PRINTERS = 8;
const FILES = 2000;
const SPAN_DAYS = 730;
const MATERIALS = ['PLA', 'PETG', 'ABS', 'ASA', 'TPU'];

/** Deterministic numbers, so that every run measures the same data. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function seedFleet(raw: BetterSqlite3.Database): void {
  const now = new Date().toISOString();
  const created = new Date(Date.now() - (SPAN_DAYS + 30) * 86_400_000).toISOString();
  const printer = raw.prepare(
    `INSERT INTO printers (id, name, type, ip_address, is_active, status, connection_status, created_at, updated_at) VALUES (?, ?, 'bambu_lab', '10.0.0.1', 1, ?, ?, ?, ?)`,
  );
  const file = raw.prepare(
    `INSERT INTO files (id, printer_id, filename, file_type, file_size, status, created_at, updated_at) VALUES (?, ?, ?, '.3mf', ?, ?, ?, ?)`,
  );
  const rnd = mulberry32(7);
  const statuses = ['available', 'downloaded', 'downloaded', 'local', 'error'];
  raw.transaction(() => {
    // Added to the farm after the service started: the fleet runs no driver for them.
    for (let p = 0; p < PRINTERS; p++) printer.run(`bench-${p}`, `Bench ${p}`, p % 3 ? 'online' : 'offline', p % 3 ? 'connected' : 'disconnected', created, now);
    for (let f = 0; f < FILES; f++) {
      file.run(`file-${f}`, `bench-${f % PRINTERS}`, `part_${f}.3mf`, Math.floor(rnd() * 50_000_000), statuses[f % statuses.length], now, now);
    }
  })();
}

/** Adds `count` jobs over the last SPAN_DAYS days, in time order, in one transaction. */
export function addJobs(raw: BetterSqlite3.Database, count: number, seed: number): void {
  const insert = raw.prepare(`INSERT INTO jobs (printer_id, printer_name, job_name, filename, status, progress, start_time, end_time,
      estimated_duration, actual_duration, material_type, material_estimated_usage, material_actual_usage, material_cost, power_cost, labor_cost,
      is_business, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const rnd = mulberry32(seed);
  const now = Date.now();
  const span = SPAN_DAYS * 86_400_000;
  const starts = Float64Array.from({ length: count }, () => now - 86_400_000 - rnd() * span).sort();
  raw.transaction(() => {
    for (let i = 0; i < count; i++) {
      const r = rnd();
      const status = r < 0.85 ? 'completed' : r < 0.93 ? 'failed' : r < 0.98 ? 'cancelled' : 'queued';
      const start = status === 'queued' ? null : starts[i];
      const duration = Math.floor(600 + rnd() * 6 * 3600);
      const done = status === 'completed' ? 1 : rnd();
      const actual = start === null ? null : Math.floor(duration * done);
      const material = rnd() < 0.05 ? null : MATERIALS[Math.floor(rnd() * MATERIALS.length)];
      const grams = Math.round((5 + rnd() * 300) * 100) / 100;
      const used = start === null ? null : Math.round(grams * done * 100) / 100;
      const startIso = start === null ? null : new Date(start).toISOString();
      const created = new Date(start ?? starts[i]).toISOString();
      insert.run(
        `bench-${i % PRINTERS}`,
        `Bench ${i % PRINTERS}`,
        `Part ${i}`,
        `part_${i % 5000}.3mf`,
        status,
        status === 'completed' ? 100 : Math.round(done * 100),
        startIso,
        start === null ? null : new Date(start + (actual ?? 0) * 1000).toISOString(),
        duration,
        actual,
        material,
        grams,
        used,
        used === null ? null : Math.round(used * 0.025 * 100) / 100,
        actual === null ? null : Math.round((actual / 3600) * 0.15 * 0.3 * 100) / 100,
        rnd() < 0.3 ? 2.5 : null,
        rnd() < 0.33 ? 1 : 0,
        created,
        created,
      );
    }
  })();
}
