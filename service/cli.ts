/**
 * `printfarm serve [--port 8000] [--host 0.0.0.0] [--data-dir ./data]`
 * Flags win over the environment variables PORT, HOST and DATA_DIR.
 */
import { parseArgs } from 'node:util';
import { createService, type Service } from './app';
import { ConfigError, VERSION } from './config';

const USAGE = `Printfarm ${VERSION}

Usage:
  printfarm serve [--port 8000] [--host 0.0.0.0] [--data-dir ./data]
  printfarm --version

Environment: PORT, HOST, DATA_DIR, LOG_LEVEL and the settings listed in the README.
`;

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', short: 'p' },
      host: { type: 'string' },
      'data-dir': { type: 'string', short: 'd' },
    },
    strict: true,
  });
  const service: Service = await createService({
    port: values.port,
    host: values.host,
    dataDir: values['data-dir'],
  });
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
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`${signal} again: exiting without waiting\n`);
      process.exit(1);
    }
    stopping = true;
    service.close().then(
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

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest);
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
