/**
 * Ends a child process for good: SIGTERM (ffmpeg then closes its output and
 * exits), SIGKILL if it is still there after a grace period. Resolves once
 * Node has reaped it and its pipes are closed: no zombie, no open fd.
 */
import type { ChildProcess } from 'node:child_process';

export const KILL_AFTER_MS = 2000;

/** A promise that resolves when `child` is gone (closed, or never started). Take it right after spawn(). */
export function whenGone(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    // A child that never started (ENOENT) has nothing to reap.
    child.once('error', () => {
      if (child.pid === undefined) resolve();
    });
  });
}

/** Stops `child` (whose whenGone() promise is `gone`) and waits until it is reaped. */
export async function terminate(child: ChildProcess, gone: Promise<void>, graceMs = KILL_AFTER_MS): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(force);
}
