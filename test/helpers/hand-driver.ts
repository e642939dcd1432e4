/**
 * A printer driver for API tests that play the printer's side themselves (the statistics and
 * status-history tests): no network, every change of state comes from the test.
 */
import { DriverError, type ConnectionState, type DriverConfig, type PrinterDriver, type PrinterState } from '../../service/printers/driver';
import { NoNetworkDriver } from './silent-driver';

/**
 * A printer the test drives by hand: it connects when told to, reports the
 * states it is given and drops its link on demand (the protocols themselves
 * are proven against the simulators in test/e2e).
 */
export class HandDriver extends NoNetworkDriver implements PrinterDriver {
  state: PrinterState | null = null;
  connection: ConnectionState = 'disconnected';
  private settle: { resolve: () => void; reject: (e: Error) => void } | null = null;

  constructor(readonly config: DriverConfig) {
    super('hand-driven printer');
  }

  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  /** The connection test succeeds. */
  online(): void {
    this.connection = 'connected';
    this.settle?.resolve();
  }

  report(state: PrinterState['state'], nozzle = 25): void {
    this.state = {
      state,
      raw_state: state.toUpperCase(),
      temperatures: { nozzle, bed: 20, nozzle_target: 0, bed_target: 0 },
      job: null,
      error: null,
      firmware_version: null,
      model: null,
      capabilities: null,
    };
    this.emit('state', this.state);
  }

  drop(): void {
    this.connection = 'disconnected';
    this.emit('connection', { connection: 'disconnected', message: 'link lost' });
  }

  async close(): Promise<void> {
    this.settle?.reject(new DriverError('OFFLINE', 'closed'));
  }
}

/** A driver factory for startService and the drivers it made, by printer id. */
export function handDrivers() {
  const drivers = new Map<string, HandDriver>();
  const factory = (_type: string, config: DriverConfig) => {
    const driver = new HandDriver(config);
    drivers.set(config.id, driver);
    return driver;
  };
  return { drivers, factory };
}
