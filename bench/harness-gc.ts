/**
 * The bench's own processes collect their garbage on one thread (`--single-threaded-gc`); the measured
 * processes keep Node's defaults. On a 2-CPU machine V8's parallel scavenges and concurrent marking run
 * helper threads on every core: a collection in the simulator host, or in the process that keeps the
 * ledger and reads both sides' /ws frames (two reader threads), took the cores from both measured
 * processes at once, and those stalls made most of the latency tail on both sides, a different share
 * of it on each side from run to run (docs/measurements.md, sessions 18 and 19). On its own thread a
 * collection delays only the harness's own work: the host's next reports, which are timed from when
 * they leave, or the arrival times one reader takes.
 */
import { spawnSync } from 'node:child_process';

export const HARNESS_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];

/** The node flags of a measured process: this process's, without the harness's own. */
export function measuredExecArgv(): string[] {
  return process.execArgv.filter((flag) => !HARNESS_NODE_FLAGS.includes(flag));
}

/** The node flags of a process of the harness (the simulator host): this process's, with the harness's own. */
export function harnessExecArgv(): string[] {
  return [...measuredExecArgv(), ...HARNESS_NODE_FLAGS];
}

/**
 * Runs this script again, with the same arguments, under the harness's flags unless it already has them
 * (node takes GC flags only at start). True when it did: this process then only passes on the exit status.
 */
export function relaunchedWithHarnessFlags(): boolean {
  if (HARNESS_NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) return false;
  const run = spawnSync(process.execPath, [...harnessExecArgv(), process.argv[1], ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exitCode = run.status ?? 1;
  return true;
}
