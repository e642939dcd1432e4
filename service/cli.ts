/**
 * `printfarm serve [--port 8000] [--host 0.0.0.0] [--data-dir ./data]`
 * Flags win over the environment variables PORT, HOST and DATA_DIR.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type * as AggregatorApp from './aggregator/app';
import type * as AggregatorConfig from './aggregator/config';
import { createService, type Service } from './app';
import { createToken, ROLES, type Role } from './auth/tokens';
import { ConfigError, startupOptions, VERSION } from './config';
import { copyDatabase, CopyError } from './db/copy';
import { isPostgresUrl, redactUrl } from './db/dialect';
import { startDemoFarm } from './embedded';
import { startFarm } from './simulators';

const USAGE = `Printfarm ${VERSION}

Usage:
  printfarm serve [--port 8000] [--host 0.0.0.0] [--data-dir ./data] [--database-url postgres://...] [--demo]
  printfarm simulate [--bambu N] [--prusa N] [--klipper N] [--speed X] [--spoolman] [--json] [--announce PORT]
  printfarm aggregator [--port 8100] [--host 0.0.0.0] [--data-dir ./aggregator-data] --submit-key KEY... [--admin-key KEY]...
                       [--rate-limit 10] [--rate-limit-per-address 60] [--rate-limit-per-key 10000] [--trust-proxy N]
                       [--tls-key FILE --tls-cert FILE] [--database-url postgres://...]
  printfarm db copy --from ./data/printfarm.db --to postgres://...
  printfarm token create --role viewer|operator|admin [--name TEXT] [--data-dir ./data]
  printfarm --version
  printfarm <command> --help   (or -h) prints this usage

serve --demo  also starts 3 simulated Bambu Lab, 2 PrusaLink and 1 Klipper printer and registers them.
simulate      starts simulated printers on 127.0.0.1 (real MQTT/FTPS, PrusaLink and Moonraker protocols);
              --spoolman also starts a Spoolman simulator (set its address as the setting spoolman_url);
              --json prints one line {"printers":[{"printer":{...},"control_url":"..."}]} (and "spoolman_url");
              --announce PORT: the Bambu printers announce themselves (SSDP) to 127.0.0.1:PORT
              like real printers do on the LAN (the service listens on DISCOVERY_SSDP_PORT, 2021).
aggregator    runs the aggregation service for opt-in usage statistics (own database in --data-dir);
              submit keys (what installations carry) from --submit-key or AGGREGATOR_SUBMIT_KEY, admin keys
              (dashboards, export, reports) from --admin-key or AGGREGATOR_ADMIN_KEY (repeatable or
              comma-separated), mail reports from AGGREGATOR_SMTP_* (see docs/usage-statistics.md).

db copy       moves a farm's SQLite database into an empty PostgreSQL database (ids kept, counts checked).
token create  makes an API token, prints it once and stores only its hash in DATA_DIR/tokens.json;
              the first token turns on access control (Authorization: Bearer) for /api/v1 and /ws.

Environment: PORT, HOST, DATA_DIR, DATABASE_URL, DATABASE_POOL_MAX, LOG_LEVEL and the settings listed in docs/configuration.md.
`;

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', short: 'p' },
      host: { type: 'string' },
      'data-dir': { type: 'string', short: 'd' },
      'database-url': { type: 'string' },
      demo: { type: 'boolean' },
    },
    strict: true,
  });
  const service: Service = await createService({
    port: values.port,
    host: values.host,
    dataDir: values['data-dir'],
    databaseUrl: values['database-url'],
    // The demo polls its simulated PrusaLink printers every 2 s instead of monitoring_interval, so it looks alive.
    fleet: values.demo ? { pollMs: 2000 } : undefined,
  });
  const farm = values.demo ? await startDemoFarm(service, {}, 20_000) : null;
  if (farm) process.stdout.write(`Demo: ${farm.printers.length} simulated printers (${farm.printers.map((p) => p.printer.id).join(', ')})\n`);
  const { url } = service;
  process.stdout.write(
    `\nPrintfarm ${VERSION} is running\n` +
      `  REST API  ${url}/api/v1  (try ${url}/api/v1/health)\n` +
      `  WebSocket ${url.replace(/^http/, 'ws')}/ws\n` +
      `  Swagger   ${url}/docs\n` +
      `  ReDoc     ${url}/redoc\n` +
      `  Data      ${service.context.dataDir}\n` +
      `Press Ctrl+C to stop.\n\n`,
  );
  stopOnSignals(() => Promise.all([service.close(), farm?.close()]));
}

/**
 * Ctrl+C (SIGINT) or SIGTERM closes what the command runs and exits 0 (1 if
 * closing failed); a second signal exits at once without waiting.
 */
function stopOnSignals(close: () => Promise<unknown>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`${signal} again: exiting without waiting\n`);
      process.exit(1);
    }
    stopping = true;
    close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

function token(args: string[]): void {
  const [action, ...rest] = args;
  if (action !== 'create') throw new ConfigError(`token: unknown action "${action ?? ''}" (try: printfarm token create --role viewer)`);
  const { values } = parseArgs({
    args: rest,
    options: { role: { type: 'string' }, name: { type: 'string' }, 'data-dir': { type: 'string', short: 'd' } },
    strict: true,
  });
  if (!values.role || !(ROLES as readonly string[]).includes(values.role)) throw new ConfigError('token create: --role must be viewer, operator or admin');
  const dataDir = path.resolve(startupOptions(process.env, { data_dir: values['data-dir'] }).data_dir);
  const made = createToken(dataDir, values.role as Role, values.name ?? '');
  process.stdout.write(
    `${made.token}\n\nA ${made.role} token (id ${made.id}) for the service with data dir ${dataDir}.\n` +
      'It is shown only now (the service keeps its hash). Send it as "Authorization: Bearer <token>".\n',
  );
}

/** The aggregation service runs from a checkout: the published Node-RED package leaves it out. */
function loadAggregator() {
  try {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { createAggregator } = require('./aggregator/app') as typeof AggregatorApp;
    const { aggregatorOptions } = require('./aggregator/config') as typeof AggregatorConfig;
    /* eslint-enable @typescript-eslint/no-require-imports */
    return { createAggregator, aggregatorOptions };
  } catch (err) {
    if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND') throw err;
    throw new ConfigError('the aggregation service is not part of the installed package: run `printfarm aggregator` from a checkout of the repository');
  }
}

async function aggregator(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', short: 'p' },
      host: { type: 'string' },
      'data-dir': { type: 'string', short: 'd' },
      'submit-key': { type: 'string', multiple: true },
      'admin-key': { type: 'string', multiple: true },
      'api-key': { type: 'string', multiple: true },
      'rate-limit': { type: 'string' },
      'rate-limit-per-address': { type: 'string' },
      'rate-limit-per-key': { type: 'string' },
      'trust-proxy': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-cert': { type: 'string' },
      'database-url': { type: 'string' },
    },
    strict: true,
  });
  const { createAggregator, aggregatorOptions } = loadAggregator();
  const options = aggregatorOptions(values);
  const service = await createAggregator(options);
  process.stdout.write(
    `\nPrintfarm aggregation service ${VERSION} is running\n` +
      `  Submit    ${service.url}/submit  (X-API-Key: a submit key)\n` +
      `  Stats     ${service.url}/stats/summary  (X-API-Key: an admin key${options.adminKeys?.length ? '' : '; none is set, so closed'})\n` +
      `  Health    ${service.url}/health\n` +
      `  Swagger   ${service.url}/docs\n` +
      `  Data      ${options.dataDir}\n` +
      `Press Ctrl+C to stop.\n\n`,
  );
  stopOnSignals(() => service.close());
}

/** `printfarm db copy --from FILE --to URL`: an SQLite database into an empty PostgreSQL one. */
async function db(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'copy') throw new ConfigError(`unknown db command "${sub ?? ''}": printfarm db copy --from ./data/printfarm.db --to postgres://...`);
  const { values } = parseArgs({
    args: rest,
    options: { from: { type: 'string' }, to: { type: 'string' }, batch: { type: 'string' } },
    strict: true,
  });
  if (!values.from || !values.to) throw new ConfigError('db copy needs --from (the SQLite file) and --to (a postgres:// URL)');
  if (!isPostgresUrl(values.to)) throw new ConfigError('--to must be a postgres:// URL');
  if (values.batch !== undefined && !(/^\d+$/.test(values.batch) && Number(values.batch) >= 1 && Number(values.batch) <= 10_000)) {
    throw new ConfigError(`--batch must be a whole number from 1 to 10000, got "${values.batch}"`);
  }
  const started = Date.now();
  let shown = '';
  const result = await copyDatabase(values.from, values.to, {
    batchSize: values.batch === undefined ? undefined : Number(values.batch),
    onProgress: (table, copied, total) => {
      // One line per table, rewritten in place while it copies when stdout is a terminal.
      if (process.stdout.isTTY) process.stdout.write(`\r  ${table}: ${copied} / ${total}`);
      shown = table;
    },
  }).catch((err) => {
    if (shown && process.stdout.isTTY) process.stdout.write('\n');
    throw err instanceof CopyError ? new ConfigError(err.message) : err;
  });
  if (process.stdout.isTTY && shown) process.stdout.write('\n');
  for (const { table, rows } of result.tables) process.stdout.write(`${table.padEnd(28)} ${String(rows).padStart(10)} rows\n`);
  process.stdout.write(
    `Copied the ${result.schema} database ${values.from} into ${redactUrl(values.to)} in ${((Date.now() - started) / 1000).toFixed(1)} s; row counts verified.\n`,
  );
}

async function simulate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      bambu: { type: 'string', default: '1' },
      prusa: { type: 'string', default: '1' },
      klipper: { type: 'string', default: '0' },
      speed: { type: 'string', default: '1' },
      spoolman: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      announce: { type: 'string' },
    },
    strict: true,
  });
  const count = (name: string, v: string) => {
    if (!/^\d+$/.test(v) || Number(v) > 2000) throw new ConfigError(`--${name} must be a whole number from 0 to 2000, got "${v}"`);
    return Number(v);
  };
  const speed = Number(values.speed);
  if (!(speed > 0 && speed <= 10_000)) throw new ConfigError(`--speed must be a number above 0 (at most 10000), got "${values.speed}"`);
  const announce = values.announce === undefined ? undefined : Number(values.announce);
  if (announce !== undefined && !(Number.isInteger(announce) && announce >= 1 && announce <= 65535)) throw new ConfigError(`--announce must be a UDP port from 1 to 65535, got "${values.announce}"`);
  const farm = await startFarm({ bambu: count('bambu', values.bambu), prusa: count('prusa', values.prusa), klipper: count('klipper', values.klipper), speed, announce, spoolman: values.spoolman });
  if (values.json) {
    process.stdout.write(JSON.stringify({ printers: farm.printers, ...(farm.spoolman_url ? { spoolman_url: farm.spoolman_url } : {}) }) + '\n');
  } else {
    for (const { printer, control_url } of farm.printers) process.stdout.write(`${printer.type}  ${printer.id}  control ${control_url}\n`);
    if (farm.spoolman_url) process.stdout.write(`spoolman  ${farm.spoolman_url}  (PUT /api/v1/settings {"spoolman_url": "${farm.spoolman_url}"})\n`);
    process.stdout.write('Add them with POST /api/v1/printers (--json prints ready bodies). Ctrl+C stops.\n');
  }
  stopOnSignals(() => farm.close());
}

/** The subcommands; each also answers `--help`/`-h` (anywhere before a `--`) with the usage. */
const SUBCOMMANDS: Record<string, (args: string[]) => Promise<void>> = { serve, simulate, aggregator, db, token: async (args) => token(args) };

/** `--help` or `-h` among a subcommand's options (what follows `--` is an argument, not an option). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** The usage lines of one subcommand (with its continuation lines), then the whole usage. */
function usageFor(command: string): string {
  const lines = USAGE.split('\n');
  const start = lines.findIndex((l) => l.trimStart().startsWith(`printfarm ${command}`));
  if (start < 0) return USAGE;
  let end = start + 1;
  while (end < lines.length && /^\s{6,}\S/.test(lines[end]) && !lines[end].trimStart().startsWith('printfarm ')) end++;
  return `${lines.slice(start, end).map((l) => l.trim().replace(/^printfarm/, 'Usage: printfarm')).join('\n  ')}\n\n${USAGE}`;
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  try {
    if (command !== undefined && Object.hasOwn(SUBCOMMANDS, command)) {
      if (asksForHelp(rest)) {
        process.stdout.write(usageFor(command));
        return;
      }
      return await SUBCOMMANDS[command](rest);
    }
    switch (command) {
      case '--version':
      case '-v':
        process.stdout.write(`${VERSION}\n`);
        return;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE);
        return;
      default:
        process.stderr.write(`Unknown command "${command}"\n\n${USAGE}`);
        process.exitCode = 2;
    }
  } catch (err) {
    const e = err as Error & { code?: string };
    if (err instanceof ConfigError || e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      process.stderr.write(`printfarm: ${e.message}\n`);
      process.exitCode = 2;
    } else if (e.code === 'EADDRINUSE') {
      process.stderr.write(`printfarm: the port is already in use (${e.message}); choose another with --port or PORT\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`printfarm: ${e.stack ?? e.message}\n`);
      process.exitCode = 1;
    }
  }
}
