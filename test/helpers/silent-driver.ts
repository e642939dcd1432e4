/**
 * A driver for API tests that must not touch the network: the printer never
 * answers (like one that is switched off), so a new printer stays in its
 * connection test. Tests of real connections use the simulators instead.
 */
import { EventEmitter } from 'node:events';
import { DriverError, type DriverConfig, type PrinterDriver } from '../../service/printers/driver';

/** A driver with no network: every printer command fails as if the printer were unreachable. */
export abstract class NoNetworkDriver extends EventEmitter {
  constructor(private readonly why: string) {
    super();
  }

  private unreachable = async (): Promise<never> => {
    throw new DriverError('OFFLINE', this.why);
  };

  listFiles = this.unreachable;
  download = this.unreachable;
  pause = this.unreachable;
  resume = this.unreachable;
  stop = this.unreachable;
  startPrint = this.unreachable;
}

export class SilentDriver extends NoNetworkDriver implements PrinterDriver {
  readonly state = null;
  readonly connection = 'disconnected' as const;
  private release: (() => void) | null = null;

  constructor(readonly config: DriverConfig) {
    super('no network in this test');
  }

  connect(): Promise<void> {
    return new Promise((_, reject) => {
      this.release = () => reject(new DriverError('OFFLINE', 'closed'));
    });
  }

  async close(): Promise<void> {
    this.release?.();
  }
}

export const silentDriverFactory = (_type: string, config: DriverConfig) => new SilentDriver(config);
