/**
 * The connection test of a driver just started: its first connect either succeeds or says why not, within a
 * deadline (a printer that never answers must not leave a new printer "testing" for ever). The driver keeps
 * retrying on its own after a failure; this only decides what the first attempt shows.
 */
import { DriverError, type ConnectionChange, type PrinterDriver } from './driver';

export async function connectionTest(driver: PrinterDriver, deadlineMs: number): Promise<ConnectionChange> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      driver.connect(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DriverError('TIMEOUT', `no answer within ${Math.round(deadlineMs / 1000)} s`)), deadlineMs);
      }),
    ]);
    return { connection: 'connected', message: null };
  } catch (err) {
    const e = err instanceof DriverError ? err : new DriverError('OFFLINE', (err as Error)?.message ?? String(err));
    // A refused access code (or a driver that already gave up on the printer) is an error, anything else offline.
    return { connection: e.code === 'AUTH' || driver.connection === 'error' ? 'error' : 'disconnected', message: e.message };
  } finally {
    clearTimeout(timer);
  }
}
