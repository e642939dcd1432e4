/**
 * A real PostgreSQL server for the tests (test/support/postgres-server.ts):
 * one server per test file, started on first use and stopped in afterAll;
 * every test gets a fresh database on it. Where the binaries are missing the
 * tests that need them say so and skip; with CI=true a missing server is a
 * failure.
 */
import { startPostgres, type PostgresServer } from '../support/postgres-server';

export { postgresUnavailable, startPostgres, type PostgresServer } from '../support/postgres-server';

let shared: Promise<PostgresServer> | null = null;

/**
 * The test file's server, started on first use and stopped after the file's tests (registers afterAll when
 * called at the top level of a file or describe).
 */
export function usePostgres(): () => Promise<PostgresServer> {
  afterAll(async () => {
    const server = shared;
    shared = null;
    if (server) await (await server).stop();
  });
  return () => (shared ??= startPostgres());
}
