/**
 * The PrusaLink simulator takes queued prints the way a Buddy printer does:
 * `PUT /api/v1/files/usb/{name}` with `Print-After-Upload: ?1` over HTTP
 * Digest (or POST on a file already there), refused with 409 unless the
 * printer is idle and its screen is at home. What a dispatcher sees comes
 * from /api/v1/status, /api/v1/info and /api/version; what really happened
 * from the control API's GET /state.
 */
import { createHash } from 'node:crypto';
import { PrusaSimulator, type PrusaSimulatorOptions } from '../../service/simulators/prusa';
import { prusaBgcode } from '../../service/simulators/seed-files';
import { rawRequest } from '../helpers/prusa-e2e';

jest.setTimeout(20_000);

type Json = Record<string, any>;

const opened: PrusaSimulator[] = [];
afterEach(async () => {
  for (const sim of opened.splice(0)) await sim.close();
});

async function startSim(options: PrusaSimulatorOptions = {}): Promise<PrusaSimulator> {
  const sim = await PrusaSimulator.start({ model: 'MK4S', speed: 60, password: 'Qu3ue-Pass', ...options });
  opened.push(sim);
  return sim;
}

interface Answer {
  status: number;
  body: string;
}


const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** A request with HTTP Digest the way Buddy wants it (user maker, no qop): challenge first, then the answer. */
async function digest(sim: PrusaSimulator, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  const challenge = await rawRequest(sim, 'GET', '/api/version', { accept: 'application/json' });
  expect(challenge.status).toBe(401);
  const params = Object.fromEntries([...String(challenge.headers['www-authenticate']).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  const ha1 = md5(`maker:${params.realm}:${sim.password}`);
  const ha2 = md5(`${method}:${path}`);
  const authorization = `Digest username="maker", realm="${params.realm}", nonce="${params.nonce}", uri="${path}", response="${md5(`${ha1}:${params.nonce}:${ha2}`)}"`;
  return rawRequest(sim, method, path, { accept: 'application/json', authorization, ...headers }, body);
}

const api = async (sim: PrusaSimulator, path: string): Promise<Json> => {
  const res = await digest(sim, 'GET', path);
  expect(res.status).toBe(200);
  return JSON.parse(res.body) as Json;
};

/** PUT with Print-After-Upload, as a dispatcher starts a print. */
const putAndPrint = (sim: PrusaSimulator, name: string, data: Buffer) =>
  digest(sim, 'PUT', `/api/v1/files/usb/${encodeURIComponent(name)}`, { 'content-type': 'application/octet-stream', 'print-after-upload': '?1', overwrite: '?1' }, data);

async function control(sim: PrusaSimulator, route: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${sim.controlUrl}${route}`, {
    method: route === '/state' ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: route === '/state' ? undefined : JSON.stringify(body ?? {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const state = async (sim: PrusaSimulator) => (await control(sim, '/state')).body;

const part = (model = 'MK4S') => prusaBgcode({ model });

describe('PrusaLink simulator: a queued print', () => {
  it('PUT with Print-After-Upload stores the file and starts it as a new job', async () => {
    const sim = await startSim();
    const idle = await api(sim, '/api/v1/status');
    expect(idle.printer.state).toBe('IDLE');
    expect(idle.job).toBeUndefined();

    const data = part();
    const put = await putAndPrint(sim, 'Queue Part.bgcode', data);
    expect(put.status).toBe(201);
    const printing = await api(sim, '/api/v1/status');
    expect(printing.printer.state).toBe('PRINTING');
    expect(printing.job.id).toEqual(expect.any(Number));
    const job = await api(sim, '/api/v1/job');
    expect(job.file.display_name).toBe('Queue Part.bgcode');

    expect(await state(sim)).toMatchObject({
      prints_started: 1,
      starts_refused: 0,
      last_start: { source: 'upload', file: 'Queue Part.bgcode', plate: null, ams_mapping: null, job_id: printing.job.id, at: expect.any(String) },
    });
    expect(sim.storage.find('Queue Part.bgcode')?.data?.equals(data)).toBe(true);

    // The next start is a new job id; a start on the screen counts too.
    expect((await control(sim, '/finish')).status).toBe(200);
    expect((await control(sim, '/print', { file: 'cube_0.2mm_PLA_MK4S_12m.gcode' })).status).toBe(200);
    const again = await api(sim, '/api/v1/status');
    expect(again.job.id).toBeGreaterThan(printing.job.id);
    expect(await state(sim)).toMatchObject({ prints_started: 2, last_start: { source: 'screen', job_id: again.job.id } });
  });

  it('answers 409 while printing and stores nothing; uploads without Print-After-Upload still land', async () => {
    const sim = await startSim();
    expect((await putAndPrint(sim, 'First.bgcode', part())).status).toBe(201);
    const { job } = await api(sim, '/api/v1/status');

    const refused = await putAndPrint(sim, 'Second.bgcode', part());
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body)).toEqual({ title: 'Conflict', text: 'The printer is busy' });
    expect(sim.storage.find('Second.bgcode')).toBeNull();
    expect((await api(sim, '/api/v1/status')).job.id).toBe(job.id); // the running print goes on

    const stored = await digest(sim, 'PUT', '/api/v1/files/usb/Later.bgcode', { 'content-type': 'application/octet-stream' }, part());
    expect(stored.status).toBe(201);
    expect(sim.storage.find('Later.bgcode')).not.toBeNull();
    expect((await digest(sim, 'POST', '/api/v1/files/usb/Later.bgcode')).status).toBe(409);
    expect(await state(sim)).toMatchObject({ prints_started: 1, starts_refused: 2 });

    // Once it is done, POST starts the stored file: 204 and a new job.
    await control(sim, '/finish');
    expect((await digest(sim, 'POST', '/api/v1/files/usb/Later.bgcode')).status).toBe(204);
    const next = await api(sim, '/api/v1/status');
    expect(next.printer.state).toBe('PRINTING');
    expect(next.job.id).toBeGreaterThan(job.id);
    expect((await digest(sim, 'POST', '/api/v1/files/usb/Nowhere.bgcode')).status).toBe(404);
  });

  it('answers 409 when its screen is not at home although it reports IDLE, and starts after /ready', async () => {
    const sim = await startSim();
    expect((await control(sim, '/not-ready')).status).toBe(200);
    expect((await api(sim, '/api/v1/status')).printer.state).toBe('IDLE'); // nothing tells a client beforehand

    const refused = await putAndPrint(sim, 'Part.bgcode', part());
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body).text).toMatch(/not ready/);
    expect(sim.storage.find('Part.bgcode')).toBeNull();
    expect((await digest(sim, 'POST', '/api/v1/files/usb/cube_0.2mm_PLA_MK4S_12m.bgcode')).status).toBe(409);
    expect(await state(sim)).toMatchObject({ screen_ready: false, prints_started: 0, starts_refused: 2 });

    await control(sim, '/ready');
    expect((await putAndPrint(sim, 'Part.bgcode', part())).status).toBe(201);
    expect((await api(sim, '/api/v1/status')).printer.state).toBe('PRINTING');
    expect(await state(sim)).toMatchObject({ screen_ready: true, prints_started: 1 });
  });

  it('an error waiting on the screen refuses starts until someone acknowledges it', async () => {
    const sim = await startSim();
    await putAndPrint(sim, 'Part.bgcode', part());
    await control(sim, '/fail', { message: 'Thermal runaway' });
    expect((await api(sim, '/api/v1/status')).printer.state).toBe('ERROR');
    expect((await putAndPrint(sim, 'Part.bgcode', part())).status).toBe(409);
    await control(sim, '/idle');
    expect((await putAndPrint(sim, 'Part.bgcode', part())).status).toBe(201);
  });

  it('reports its loaded filament, nozzle and model; POST /materials changes the filament', async () => {
    const sim = await startSim({ nozzleDiameter: 0.6 });
    expect((await api(sim, '/api/v1/status')).printer.material).toBe('PLA');
    expect((await api(sim, '/api/v1/info')).nozzle_diameter).toBe(0.6);
    const version = await api(sim, '/api/version');
    expect(version).toMatchObject({ text: 'PrusaLink MK4S', nozzle_diameter: 0.6, capabilities: { 'upload-by-put': true } });
    expect((await api(sim, '/api/v1/info')).hostname).toBe('prusa-mk4s');
    expect(await state(sim)).toMatchObject({ materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF' }], nozzle_diameter: 0.6 });

    expect((await control(sim, '/materials', { materials: [{ slot: 0, type: 'petg', color: '#000000' }] })).body).toEqual({ materials: [{ slot: 0, type: 'PETG', color: '#000000' }] });
    expect((await api(sim, '/api/v1/status')).printer.material).toBe('PETG');
    expect((await control(sim, '/materials', { materials: [] })).status).toBe(200);
    expect((await api(sim, '/api/v1/status')).printer.material).toBe('---'); // Buddy's word for nothing loaded
    for (const bad of [{ materials: [{ slot: 1, type: 'PLA' }] }, { materials: [{ slot: 0, type: 'PLA', color: 'red' }] }, {}]) {
      expect((await control(sim, '/materials', bad)).status).toBe(400);
    }
    expect((await state(sim)).materials).toEqual([]);
  });

  it('holds seed files sliced for the model it simulates', async () => {
    const sim = await startSim({ model: 'Core One' });
    const bgcode = sim.storage.find('cube_0.2mm_PLA_MK4S_12m.bgcode')!.data!;
    expect(bgcode.includes(Buffer.from('printer_model=COREONE\n'))).toBe(true);
    expect(bgcode.includes(Buffer.from('filament_type=PLA\n'))).toBe(true);
    const gcode = sim.storage.find('cube_0.2mm_PLA_MK4S_12m.gcode')!.data!.toString();
    expect(gcode).toContain('; printer_model = COREONE');
  });
});
