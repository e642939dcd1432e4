/**
 * Runs the tasks of one key one after the other (tasks of different keys run side by side). For work that reads
 * a state, awaits, then acts on what it read: a second task of the same key starts from what the first one left,
 * not from what both saw before either acted.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    // The map forgets a key once its last task ended (no entry per printer ever seen).
    void tail.then(() => this.tails.get(key) === tail && this.tails.delete(key));
    return result;
  }
}
