/**
 * The `docker compose` example of docs/scaling.md, as far as it can be run
 * without a Docker engine: the Dockerfile starts the CLI this checkout builds,
 * nginx balances the aggregator on its port, and the services built from the
 * checkout run with the command and environment the compose file gives them
 * (on 127.0.0.1 and free ports, their data dirs in temp dirs, and `db:5432`
 * pointed at the tests' own PostgreSQL server): the farm serves on PostgreSQL,
 * and the aggregator's replicas share one database.
 * Needs dist/ (npm run build) and PostgreSQL (see test/helpers/postgres.ts).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { startAggregatorProcess, type AggregatorProcess } from '../helpers/aggregator-process';
import { killChildren, spawnService } from '../helpers/child-service';
import { postgresUnavailable, usePostgres } from '../helpers/postgres';
import { tempDir } from '../helpers/service';

const root = path.join(__dirname, '..', '..');
const doc = fs.readFileSync(path.join(root, 'docs', 'scaling.md'), 'utf8');
/** The fenced blocks of the page, by language. */
const blocks = [...doc.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
const block = (lang: string, contains: string) => {
  const found = blocks.find((b) => b.lang === lang && b.text.includes(contains));
  if (!found) throw new Error(`docs/scaling.md has no ${lang} block with ${contains}`);
  return found.text;
};

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  deploy?: { replicas?: number };
}
const compose = yaml.load(block('yaml', 'services:')) as { services: Record<string, ComposeService> };
const dockerfile = block('dockerfile', 'ENTRYPOINT');
const nginx = block('nginx', 'upstream');

describe('the docker compose example of docs/scaling.md: its files', () => {
  test('the Dockerfile installs the checkout (npm ci builds dist/) and runs bin/printfarm.js', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
    expect(pkg.scripts.prepare).toMatch(/\bbuild\b/);
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)!;
    expect(JSON.parse(entry[1])).toEqual(['node', 'bin/printfarm.js']);
    expect(Object.values(pkg.bin)).toContain('bin/printfarm.js');
    expect(fs.existsSync(path.join(root, 'bin', 'printfarm.js'))).toBe(true);
  });

  test('nginx forwards its port to the aggregator replicas on the aggregator\'s default port', () => {
    expect(nginx).toMatch(/upstream aggregator \{ server aggregator:8100; \}/);
    expect(nginx).toMatch(/listen 8100;/);
    expect(compose.services.balancer.ports).toEqual(['8100:8100']);
    expect(compose.services.aggregator.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(compose.services.farm.ports).toEqual(['8000:8000']);
  });
});

const missing = postgresUnavailable();
(missing ? describe.skip : describe)(`the docker compose example of docs/scaling.md: its services${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const server = missing ? null : usePostgres();
  const dirs: string[] = [];
  let replicas: AggregatorProcess[] = [];

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await killChildren();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the farm serves on PostgreSQL; a report sent to one aggregator replica counts in the other\'s summary', async () => {
    // db-init's job: the farm's and the aggregator's databases on one server.
    const pg = await server!();
    const databases: Record<string, string> = {};
    const url = (composeUrl: string) => {
      const m = /^postgres:\/\/\w+:\w+@db:5432\/(\w+)$/.exec(composeUrl);
      if (!m) throw new Error(`unexpected DATABASE_URL ${composeUrl}`);
      return databases[m[1]];
    };
    for (const name of ['printfarm', 'aggregator']) databases[name] = await pg.createDatabase(name);
    expect(compose.services['db-init'].command).toContain('CREATE DATABASE aggregator');

    const farm = compose.services.farm;
    expect(farm.build).toBe('.');
    expect(farm.command).toEqual(['serve', '--data-dir', '/data']);
    const farmDir = tempDir('printfarm-compose-farm-');
    dirs.push(farmDir);
    const service = await spawnService(farmDir, { ...farm.environment, DATABASE_URL: url(farm.environment!.DATABASE_URL) });
    expect((await service.get('/api/v1/health')).body).toMatchObject({ status: 'healthy', database: 'connected' });
    expect((await service.get('/api/v1/system/info')).body.database).toMatchObject({ type: 'postgresql' });
    // Nothing of the farm went to the data dir's SQLite file.
    expect(fs.existsSync(path.join(farmDir, 'printfarm.db'))).toBe(false);

    const aggregator = compose.services.aggregator;
    expect(aggregator.build).toBe('.');
    const [command, ...args] = aggregator.command!;
    expect(command).toBe('aggregator');
    const env = { ...aggregator.environment, DATABASE_URL: url(aggregator.environment!.DATABASE_URL) };
    replicas = await Promise.all(
      Array.from({ length: aggregator.deploy!.replicas! }, () => {
        const dir = tempDir('printfarm-compose-agg-');
        dirs.push(dir);
        return startAggregatorProcess(args.map((a) => (a === '/tmp/aggregator' ? dir : a)), env);
      }),
    );
    for (const r of replicas) expect((await fetch(`${r.url}/health/ready`)).status).toBe(200);

    const key = aggregator.environment!.AGGREGATOR_SUBMIT_KEY;
    const adminKey = aggregator.environment!.AGGREGATOR_ADMIN_KEY;
    const at = new Date();
    const report = {
      installation_id: randomUUID(),
      submitted_at: at.toISOString(),
      schema_version: '1.0',
      period_start: new Date(at.getTime() - 7 * 86_400_000).toISOString(),
      period_end: at.toISOString(),
      app_version: '0.1.0',
      platform: 'linux',
      deployment_mode: 'docker',
      country_code: 'DE',
      printer_count: 2,
      printer_types: ['prusa_core'],
      printer_type_counts: { prusa_core: 2 },
      total_jobs_created: 4,
      total_jobs_completed: 3,
      total_jobs_failed: 1,
      total_files_downloaded: 0,
      total_files_uploaded: 1,
      uptime_hours: 24,
      feature_usage: {},
      event_counts: {},
    };
    const sent = await fetch(`${replicas[0].url}/submit`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(report) });
    expect([sent.status, sent.status === 201 ? '' : await sent.text()]).toEqual([201, '']);
    const summary = (await (await fetch(`${replicas[1].url}/stats/summary`, { headers: { 'x-api-key': adminKey } })).json()) as Record<string, unknown>;
    expect(summary).toMatchObject({ total_installations: 1, total_submissions: 1, totals: { jobs_created: 4, jobs_completed: 3, jobs_failed: 1 } });
  }, 90_000);
});
