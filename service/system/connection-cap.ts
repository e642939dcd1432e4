/**
 * A cap on concurrent /ws connections, always on (rate limits or not): in
 * total and per client address. Idle WebSocket clients cost a file descriptor
 * each; without a cap 20 000 of them starve the API of descriptors. Refusals
 * are logged at most once a minute, with how many there were.
 */
export interface ConnectionCapOptions {
  maxTotal: number;
  maxPerAddress: number;
  /** Called at most once per `logEveryMs` while refusing: the refusals since the last call. */
  onRefusals: (summary: { refused: number; open: number; max_total: number; max_per_address: number }) => void;
  logEveryMs?: number;
  now?: () => number;
}

export type CapVerdict = { release: () => void } | { refused: 'total' | 'address'; limit: number };

export class ConnectionCap {
  private open = 0;
  private readonly perAddress = new Map<string, number>();
  private refusedSinceLog = 0;
  private loggedAt = -Infinity;

  constructor(private readonly options: ConnectionCapOptions) {}

  get openCount(): number {
    return this.open;
  }

  admit(address: string): CapVerdict {
    const { maxTotal, maxPerAddress } = this.options;
    const mine = this.perAddress.get(address) ?? 0;
    if (this.open >= maxTotal) return this.refuse('total', maxTotal);
    if (mine >= maxPerAddress) return this.refuse('address', maxPerAddress);
    this.open++;
    this.perAddress.set(address, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.open--;
        const left = (this.perAddress.get(address) ?? 1) - 1;
        if (left > 0) this.perAddress.set(address, left);
        else this.perAddress.delete(address);
      },
    };
  }

  private refuse(refused: 'total' | 'address', limit: number): CapVerdict {
    this.refusedSinceLog++;
    const now = (this.options.now ?? Date.now)();
    if (now - this.loggedAt >= (this.options.logEveryMs ?? 60_000)) {
      this.loggedAt = now;
      this.options.onRefusals({ refused: this.refusedSinceLog, open: this.open, max_total: this.options.maxTotal, max_per_address: this.options.maxPerAddress });
      this.refusedSinceLog = 0;
    }
    return { refused, limit };
  }
}
