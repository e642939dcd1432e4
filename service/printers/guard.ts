/**
 * Wraps callbacks that the network or a timer calls for one printer: an
 * exception goes to `onError` (which marks that printer) and never reaches the
 * process, where it would stop the whole farm.
 */
/** What guardWith returns: wraps a callback so that nothing it throws escapes. */
export type Guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => void;

export function guardWith(onError: (err: unknown) => void): Guard {
  return (fn) =>
    (...args) => {
      try {
        fn(...args);
      } catch (err) {
        onError(err);
      }
    };
}

export const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
