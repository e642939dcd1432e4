/**
 * Shared setup of the queue's end-to-end tests: simulated printers of chosen
 * models over their real protocols, a service with short timings, uploads,
 * and the simulators' own account of what they were asked to do.
 */
import { driverFactory } from '../../service/printers/drivers';
import { BambuSimulator } from '../../service/simulators/bambu';
import { KlipperSimulator, type KlipperSimulatorOptions } from '../../service/simulators/klipper';
import { PrusaSimulator } from '../../service/simulators/prusa';
import type { ServiceOptions } from '../../service/app';
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import type { Harness } from '../helpers/service';

export const queueServiceOptions: ServiceOptions = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 3000, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
};

export interface SimPrinter {
  id: string;
  name: string;
  control: string;
  body: Record<string, unknown>;
  close(): Promise<void>;
}

export async function bambuSim(id: string, name: string, model = 'X1C', speed = 20, extra: Record<string, unknown> = {}): Promise<SimPrinter> {
  const sim = await BambuSimulator.start({ id, name, model, speed, ...extra });
  return { id, name, control: sim.controlUrl, body: sim.printerConfig() as unknown as Record<string, unknown>, close: () => sim.close() };
}

export async function prusaSim(id: string, name: string, model = 'MK4S', speed = 20): Promise<SimPrinter> {
  const sim = await PrusaSimulator.start({ id, name, model, speed });
  return { id, name, control: sim.controlUrl, body: sim.printerConfig() as unknown as Record<string, unknown>, close: () => sim.close() };
}

export async function klipperSim(id: string, name: string, model = 'Voron 2.4 350', speed = 20, extra: KlipperSimulatorOptions = {}): Promise<SimPrinter> {
  const sim = await KlipperSimulator.start({ id, name, model, speed, apiKey: 'moonraker-key', ...extra });
  return { id, name, control: sim.controlUrl, body: sim.printerConfig() as unknown as Record<string, unknown>, close: () => sim.close() };
}

/** What a simulator says about itself (GET /state). */
export async function simState(p: SimPrinter): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return (await fetch(`${p.control}/state`)).json() as Promise<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function addPrinters(h: Harness, printers: SimPrinter[]): Promise<void> {
  for (const p of printers) expect((await h.post('/api/v1/printers', p.body)).status).toBe(201);
  for (const p of printers) {
    await until(async () => {
      const d = (await h.get(`/api/v1/printers/${p.id}`)).body;
      return d.connection_status === 'connected' && d.materials !== undefined;
    }, `${p.id} connected`, 15_000);
  }
}

/** Uploads a file to a service (a Harness or a child service: anything with its base URL); returns the file id. */
export async function upload(h: Pick<Harness, 'base'>, name: string, data: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)]), name);
  const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

export const item = async (h: Harness, id: string) => (await h.get(`/api/v1/queue/${id}`)).body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Waits until the item satisfies `ok`, with the item in the failure message. */
export async function itemUntil(h: Harness, id: string, ok: (i: Record<string, any>) => boolean, what: string, ms = 20_000) { // eslint-disable-line @typescript-eslint/no-explicit-any
  let last: unknown;
  try {
    return await until(async () => {
      last = await item(h, id);
      return ok(last as Record<string, unknown>) ? (last as Record<string, any>) : null; // eslint-disable-line @typescript-eslint/no-explicit-any
    }, what, ms);
  } catch (err) {
    throw new Error(`${(err as Error).message}; item: ${JSON.stringify(last)}`);
  }
}

/** Queues an X1C file on slowed printer `p` and waits until its upload is under way: where a stop cuts an upload. */
export async function queueUntilUploading(h: Harness, p: SimPrinter, name: string): Promise<{ file: string; itemId: string }> {
  await control(p.control, 'faults', { transfer_bytes_per_sec: 2000 });
  const file = await upload(h, name, bambu3mf({ model: 'X1C' }));
  const { body } = await h.post('/api/v1/queue', { file_id: file });
  await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'uploading', 'uploading');
  return { file, itemId: body.id };
}
