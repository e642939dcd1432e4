/**
 * A signal that aborts after `ms` (with `reason()`) or with any of `signals`, and `clear()` for its timer (call it
 * once the wait is over). A timer of our own, not AbortSignal.timeout(): inside AbortSignal.any() Node 20 may
 * garbage-collect that signal before it fires (nodejs/node#57736), and the wait it was to bound had no end.
 */
export function deadline(ms: number, reason: () => Error, ...signals: (AbortSignal | undefined)[]): { signal: AbortSignal; expired(): boolean; clear(): void } {
  const own = new AbortController();
  const timer = setTimeout(() => own.abort(reason()), ms);
  // Like AbortSignal.timeout(): the deadline alone keeps no process alive.
  timer.unref();
  const others = signals.filter((s): s is AbortSignal => s !== undefined);
  return {
    signal: others.length ? AbortSignal.any([...others, own.signal]) : own.signal,
    expired: () => own.signal.aborted,
    clear: () => clearTimeout(timer),
  };
}
