/**
 * A real PostgreSQL server for the tests (test/support/postgres-server.ts):
 * one server per test file, started on first use and stopped once the file's
 * tests and every one of its afterAll hooks are done; every test gets a fresh
 * database on it. Where the binaries are missing the tests that need them say
 * so and skip; with CI=true a missing server is a failure.
 */
import { startPostgres, type PostgresServer } from '../support/postgres-server';

export { postgresUnavailable, startPostgres, type PostgresServer } from '../support/postgres-server';

let shared: Promise<PostgresServer> | null = null;

/*
 * Registered here, at the file's top level (this module is loaded when the test file imports it, before any
 * describe runs): jest-circus runs a block's afterAll hooks in the order they were declared, and a describe's
 * hooks before its parent's. A hook declared by usePostgres() at the top of a describe ran before the hooks
 * that close that block's services and stores, so the server went away (pg_ctl -m immediate) under pools
 * still open: their connections died mid-use, and a worker's last file could leave sockets and reconnect
 * timers behind ("A worker process has failed to exit gracefully"). The root block's hook runs last.
 */
afterAll(async () => {
  const server = shared;
  shared = null;
  if (server) await (await server).stop();
});

/** The test file's server, started on first use and stopped after all of the file's tests and hooks. */
export function usePostgres(): () => Promise<PostgresServer> {
  return () => (shared ??= startPostgres());
}
