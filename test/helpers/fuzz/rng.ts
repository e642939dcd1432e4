/**
 * The fuzzer's randomness: a seeded PRNG, so that every generated request
 * reproduces from the seed a run prints (FUZZ_SEED=<seed> npx jest test/api/fuzz-*.test.ts).
 */

/** The seed of this run: FUZZ_SEED when set (to reproduce a failure), else a fixed one. */
export const SEED = Number(process.env.FUZZ_SEED ?? 20250417);

/** mulberry32: a tiny 32-bit PRNG, deterministic for a seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  private readonly next: () => number;
  constructor(readonly seed: number) {
    this.next = mulberry32(seed);
  }
  float(): number {
    return this.next();
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  /** Up to `n` items, in a random order (all of them when there are fewer). */
  sample<T>(items: readonly T[], n: number): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [copy[i], copy[j]] = [copy[j], copy[i]];
    }
    return copy.slice(0, n);
  }
}
