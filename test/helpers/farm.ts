/**
 * Small tools for tests that drive the simulators: their control API, their
 * state, and waiting for a condition with a deadline (never a bare sleep).
 */
import { driverFactory } from '../../service/printers/drivers';
import type { ServiceOptions } from '../../service/app';

/** Service options for tests with simulated printers: real drivers that reconnect and notice silence within a second or two. */
export function quickDrivers(): Pick<ServiceOptions, 'driverFactory' | 'fleet'> {
  return {
    driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
    fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
  };
}

/** Polls `probe` until it returns a truthy value, failing after `ms`. */
export async function until<T>(probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Drives a simulator's control API (POST {url}/{action}); fails on a non-2xx answer. */
export async function control(url: string, action: string, body: unknown = {}): Promise<unknown> {
  const res = await fetch(`${url}/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`control ${action}: ${res.status} ${await res.text()}`);
  return res.json().catch(() => ({}));
}

export interface SimulatorState {
  status: string;
  progress: number;
  file: string | null;
  files: string[];
}

/** A simulator's own view of itself (GET {url}/state). */
export const simState = async (url: string) => (await (await fetch(`${url}/state`)).json()) as SimulatorState;
