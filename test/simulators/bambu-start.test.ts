/**
 * The Bambu simulator takes queued prints the way a real printer does, over
 * its real protocols: an implicit-FTPS upload to the card root (basic-ftp),
 * then the `project_file` command over MQTT/TLS with QoS 1 (mqtt.js). What a
 * dispatcher sees comes from the printer's reports; what really happened
 * comes from the control API's GET /state. Each quirk QUEUE.md names for
 * real printers is reproduced here.
 */
import { Readable } from 'node:stream';
import { Client } from 'basic-ftp';
import { connect as mqttConnect, type MqttClient } from 'mqtt';
import { BambuSimulator, type BambuSimulatorOptions } from '../../service/simulators/bambu';
import { bambu3mf } from '../../service/simulators/seed-files';

jest.setTimeout(30_000);

type Json = Record<string, any>;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startSim(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
  const sim = await BambuSimulator.start({ model: 'X1C', speed: 60, ...options });
  cleanups.push(() => sim.close());
  return sim;
}

async function control(sim: BambuSimulator, route: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${sim.controlUrl}${route}`, {
    method: route === '/state' ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: route === '/state' ? undefined : JSON.stringify(body ?? {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const state = async (sim: BambuSimulator) => (await control(sim, '/state')).body;

async function ftpUpload(sim: BambuSimulator, name: string, data: Buffer): Promise<void> {
  const client = new Client(10_000);
  try {
    await client.access({ host: '127.0.0.1', port: sim.ftpsPort, user: 'bblp', password: sim.accessCode, secure: 'implicit', secureOptions: { rejectUnauthorized: false } });
    await client.uploadFrom(Readable.from([data]), `/${name}`);
  } finally {
    client.close();
  }
}

/** An MQTT client on the printer's broker that keeps every message of the report topic. */
class Watcher {
  readonly messages: Json[] = [];
  private listeners = new Set<() => void>();
  private constructor(
    readonly client: MqttClient,
    readonly sim: BambuSimulator,
  ) {
    client.on('message', (_topic, payload) => {
      this.messages.push(JSON.parse(payload.toString()) as Json);
      for (const l of [...this.listeners]) l();
    });
  }

  static async open(sim: BambuSimulator): Promise<Watcher> {
    const client = mqttConnect({ protocol: 'mqtts', host: '127.0.0.1', port: sim.mqttPort, username: 'bblp', password: sim.accessCode, rejectUnauthorized: false, reconnectPeriod: 0 });
    cleanups.push(() => client.endAsync(true));
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    await client.subscribeAsync(`device/${sim.serial}/report`);
    return new Watcher(client, sim);
  }

  /** Resolves with the first message (from index `from`) that matches, with a deadline. */
  next(match: (m: Json) => boolean, label: string, from = 0, timeoutMs = 10_000): Promise<Json> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.messages.slice(from).find(match);
        if (!hit) return false;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(hit);
        return true;
      };
      const listener = () => void check();
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`timed out waiting for ${label}`));
      }, timeoutMs);
      this.listeners.add(listener);
      check();
    });
  }

  /** The printer's full state, as a pushall returns it. */
  async full(): Promise<Json> {
    const from = this.messages.length;
    await this.request({ pushing: { sequence_id: '0', command: 'pushall' } });
    return (await this.next((m) => m.print?.command === 'push_status' && m.print.msg === 0, 'full report', from)).print;
  }

  async request(message: Json): Promise<void> {
    await this.client.publishAsync(`device/${this.sim.serial}/request`, JSON.stringify(message), { qos: 1 });
  }

  /** Sends a print command and resolves with the printer's answer to it (same sequence_id). */
  async command(print: Json): Promise<Json> {
    const from = this.messages.length;
    await this.request({ print });
    return (await this.next((m) => m.print?.command === print.command && m.print.sequence_id === print.sequence_id && 'result' in m.print, `${print.command} answer`, from)).print;
  }

  /** Waits for a push_status whose gcode_state is `wanted`. */
  gcodeState(wanted: string, from = 0): Promise<Json> {
    return this.next((m) => m.print?.command === 'push_status' && m.print.gcode_state === wanted, `gcode_state ${wanted}`, from).then((m) => m.print);
  }

  /** Resolves after `n` more push_status reports. */
  async reports(n: number): Promise<void> {
    const from = this.messages.length;
    await this.next(() => this.messages.slice(from).filter((m) => m.print?.command === 'push_status').length >= n, `${n} reports`, from);
  }
}

let sequence = 1000;
let nextId = 4000;

/** project_file exactly as QUEUE.md spells it (fresh decimal-string ids, JSON booleans). */
function projectFile(name: string, overrides: Json = {}): Json {
  const id = String(++nextId);
  return {
    sequence_id: String(++sequence),
    command: 'project_file',
    param: 'Metadata/plate_1.gcode',
    url: `ftp://${name}`,
    file: name,
    md5: '',
    bed_type: 'auto',
    cfg: '0',
    profile_id: '0',
    project_id: id,
    subtask_id: id,
    task_id: id,
    subtask_name: name.replace(/\.gcode\.3mf$|\.3mf$/, ''),
    timelapse: false,
    bed_leveling: true,
    auto_bed_leveling: 1,
    flow_cali: false,
    vibration_cali: false,
    layer_inspect: false,
    use_ams: true,
    ams_mapping: [0],
    ams_mapping2: [{ ams_id: 0, slot_id: 0 }],
    ...overrides,
  };
}

/** A one-minute X1C print (one second at speed 60). */
const shortPrint = (filaments = [{ type: 'PLA', color: '#FFFFFF' }]) => bambu3mf({ model: 'X1C', predictionS: 60, filaments });

describe('Bambu simulator: a queued print over FTPS and MQTT', () => {
  it('uploads to the card root, starts with project_file, goes PREPARE -> RUNNING with our ids, then FINISH', async () => {
    const sim = await startSim();
    const watcher = await Watcher.open(sim);
    const data = shortPrint();
    await ftpUpload(sim, 'Queue_Part.gcode.3mf', data);
    expect(sim.storage.get('/Queue_Part.gcode.3mf')?.data.equals(data)).toBe(true);
    expect((await state(sim)).stats).toMatchObject({ ftp_uploads: 1, ftp_upload_collisions: 0 });

    const request = projectFile('Queue_Part.gcode.3mf');
    const from = watcher.messages.length;
    expect(await watcher.command(request)).toMatchObject({ result: 'success' });
    const preparing = await watcher.gcodeState('PREPARE', from);
    expect(preparing).toMatchObject({ subtask_id: request.subtask_id, task_id: request.task_id, project_id: request.project_id, subtask_name: 'Queue_Part' });
    await watcher.gcodeState('RUNNING', from);
    await watcher.gcodeState('FINISH', from);

    const after = await state(sim);
    expect(after).toMatchObject({ status: 'finished', prints_started: 1, starts_while_busy: 0, subtask_id: request.subtask_id });
    expect(after.last_start).toEqual({
      source: 'mqtt',
      file: '/Queue_Part.gcode.3mf',
      plate: 1,
      ams_mapping: [0],
      use_ams: true,
      subtask_id: request.subtask_id,
      task_id: request.task_id,
      project_id: request.project_id,
      subtask_name: 'Queue_Part',
      flags: { timelapse: false, bed_leveling: true, flow_cali: false, vibration_cali: false, layer_inspect: false },
      ignored_fields: [],
      trays: [{ filament: 1, type: 'PLA', color: '#FFFFFF', slot: 0, loaded_type: 'PLA', loaded_color: '#FFFFFF' }],
      stalled: null,
      at: expect.any(String),
    });

    // A start on the screen counts as well; FINISH is a state a new print may start from.
    expect((await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' })).status).toBe(200);
    expect(await state(sim)).toMatchObject({ prints_started: 2, last_start: { source: 'screen', file: '/Cube_PLA.gcode.3mf' } });
  });

  it('reports its AMS trays, external spool, nozzle and model; POST /materials changes them', async () => {
    const sim = await startSim({ nozzleDiameter: 0.6 });
    expect(sim.serial.slice(0, 3)).toBe('00M'); // an X1C's serial prefix
    const watcher = await Watcher.open(sim);
    const full = await watcher.full();
    expect(full.nozzle_diameter).toBe('0.6');
    expect(full.ams.ams).toEqual([
      {
        id: '0',
        humidity: expect.any(String),
        temp: expect.any(String),
        // The default spool is a tagged Bambu spool: its RFID identity and remaining percentage.
        tray: [expect.objectContaining({ id: '0', tray_type: 'PLA', tray_color: 'FFFFFFFF', remain: 100, tray_uuid: expect.stringMatching(/^(?!0+$)[0-9A-F]{32}$/) }), { id: '1' }, { id: '2' }, { id: '3' }],
      },
    ]);
    expect(full.vt_tray).toMatchObject({ id: '254', tray_type: '' });

    const from = watcher.messages.length;
    await watcher.request({ info: { sequence_id: '7', command: 'get_version' } });
    const version = (await watcher.next((m) => m.info?.command === 'get_version', 'get_version', from)).info;
    expect(version.module.find((m: Json) => m.name === 'ota')).toMatchObject({ product_name: 'Bambu Lab X1C', sw_ver: '01.08.02.00' });

    const materials = [
      { slot: 0, type: 'PLA', color: '#FFFFFF' },
      { slot: 1, type: 'PETG', color: '#000000' },
      { slot: 254, type: 'TPU', color: '#FF0000' },
    ];
    // Spools without a tag: all-zero tray_uuid, remain unknown (-1), like a real AMS.
    expect((await control(sim, '/materials', { materials })).body).toEqual({ materials: materials.map((m) => ({ ...m, remain: -1, rfid: null })) });
    const loaded = await watcher.full();
    expect(loaded.ams.ams[0].tray[1]).toMatchObject({ id: '1', tray_type: 'PETG', tray_color: '000000FF', remain: -1, tray_uuid: '0'.repeat(32) });
    expect(loaded.vt_tray).toMatchObject({ id: '254', tray_type: 'TPU', tray_color: 'FF0000FF' });
    expect((await state(sim)).materials).toEqual(materials.map((m) => ({ ...m, remain: -1, rfid: null })));
    // A tagged spool reports its tag and percentage.
    const tagged = [{ slot: 0, type: 'PLA', color: '#FFFFFF', tray_uuid: 'AB'.repeat(16), remain: 60 }, materials[1], materials[2]];
    expect((await control(sim, '/materials', { materials: tagged })).status).toBe(200);
    expect((await watcher.full()).ams.ams[0].tray[0]).toMatchObject({ tray_uuid: 'AB'.repeat(16), remain: 60 });

    // One AMS: trays 0-3 and the external spool, nothing else; bad bodies change nothing.
    for (const bad of [{ materials: [{ slot: 4, type: 'PLA' }] }, { materials: [{ slot: 0, type: 'PLA', color: 'white' }] }, { materials: 'PLA' }, { materials: [materials[0], materials[0]] }]) {
      expect((await control(sim, '/materials', bad)).status).toBe(400);
    }
    expect((await state(sim)).materials).toHaveLength(3);
  });
});

describe('Bambu simulator: starts that real printers refuse or mishandle', () => {
  it('a start while printing cancels the running print (0500_4004) and starts nothing', async () => {
    const sim = await startSim();
    const watcher = await Watcher.open(sim);
    await ftpUpload(sim, 'Long.gcode.3mf', bambu3mf({ model: 'X1C', predictionS: 3600 }));
    const first = projectFile('Long.gcode.3mf');
    await watcher.command(first);
    await watcher.gcodeState('RUNNING');

    const from = watcher.messages.length;
    const second = projectFile('Long.gcode.3mf');
    expect(await watcher.command(second)).toMatchObject({ result: 'fail', reason: expect.stringMatching(/busy.*cancelled/) });
    const failed = await watcher.gcodeState('FAILED', from);
    expect(failed.print_error).toBe(0x05004004);
    // The cancelled print is still the one shown.
    expect(await state(sim)).toMatchObject({ status: 'failed', subtask_id: first.subtask_id, prints_started: 1, starts_while_busy: 1, last_start: { subtask_id: first.subtask_id } });
  });

  it.each([
    ['a mapping to an empty tray', { ams_mapping: [2] }, /tray 2 is empty/],
    ['a mapping to a tray that does not exist', { ams_mapping: [9] }, /no such tray/],
    ['a mapping longer than the file has filaments', { ams_mapping: [0, -1] }, /2 entries, the file has 1/],
    ['a mapping to the empty external spool', { ams_mapping: [-1] }, /external spool is empty/],
  ])('a start with %s hangs in PREPARE ("preparing AMS") for ever', async (_label, overrides, reason) => {
    const sim = await startSim();
    const watcher = await Watcher.open(sim);
    await ftpUpload(sim, 'Part.gcode.3mf', shortPrint());
    const from = watcher.messages.length;
    expect(await watcher.command(projectFile('Part.gcode.3mf', overrides))).toMatchObject({ result: 'success' });
    await watcher.gcodeState('PREPARE', from);
    await watcher.reports(20); // 2 s at speed 60: more than twice the normal PREPARE
    expect(await state(sim)).toMatchObject({ gcode_state: 'PREPARE', stalled: expect.stringMatching(reason), prints_started: 1 });
    expect(watcher.messages.slice(from).some((m) => m.print?.gcode_state === 'RUNNING')).toBe(false);
    expect((await control(sim, '/cancel')).status).toBe(200); // a person at the printer gets it out
  });

  it('a mapping that fits a two-filament file starts; the wrong material in a tray is used anyway', async () => {
    const sim = await startSim();
    await control(sim, '/materials', { materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF' }, { slot: 3, type: 'ASA', color: '#00FF00' }] });
    const watcher = await Watcher.open(sim);
    await ftpUpload(sim, 'Two.gcode.3mf', shortPrint([{ type: 'PLA', color: '#FFFFFF' }, { type: 'PETG', color: '#000000' }]));
    const from = watcher.messages.length;
    await watcher.command(projectFile('Two.gcode.3mf', { ams_mapping: [0, 3] }));
    await watcher.gcodeState('RUNNING', from);
    expect((await state(sim)).last_start.trays).toEqual([
      { filament: 1, type: 'PLA', color: '#FFFFFF', slot: 0, loaded_type: 'PLA', loaded_color: '#FFFFFF' },
      { filament: 2, type: 'PETG', color: '#000000', slot: 3, loaded_type: 'ASA', loaded_color: '#00FF00' },
    ]);
  });

  it('refuses a file that is not on the card or a plate that is not in it, with result "fail"', async () => {
    const sim = await startSim();
    const watcher = await Watcher.open(sim);
    expect(await watcher.command(projectFile('Nowhere.gcode.3mf'))).toMatchObject({ result: 'fail', reason: 'file not found: ftp://Nowhere.gcode.3mf' });
    expect(await watcher.command(projectFile('Cube_PLA.gcode.3mf', { param: 'Metadata/plate_2.gcode' }))).toMatchObject({ result: 'fail', reason: expect.stringMatching(/verify failed/) });
    expect(await state(sim)).toMatchObject({ gcode_state: 'IDLE', prints_started: 0, last_start: null });
  });

  it('acknowledges ids that are not decimal strings below 2^31-1 yet stays IDLE, like a P1S', async () => {
    const sim = await startSim({ model: 'P1S' });
    const watcher = await Watcher.open(sim);
    const from = watcher.messages.length;
    expect(await watcher.command(projectFile('Cube_PLA.gcode.3mf', { subtask_id: '4294967296', task_id: '4294967296' }))).toMatchObject({ result: 'success' });
    expect(await watcher.command(projectFile('Cube_PLA.gcode.3mf', { subtask_id: 12345 }))).toMatchObject({ result: 'success' });
    await watcher.reports(5);
    expect(watcher.messages.slice(from).some((m) => m.print?.gcode_state && m.print.gcode_state !== 'IDLE')).toBe(false);
    expect(await state(sim)).toMatchObject({ gcode_state: 'IDLE', prints_started: 0 });
  });

  it('ignores calibration flags and use_ams that are not JSON booleans', async () => {
    const sim = await startSim({ model: 'P1S' });
    const watcher = await Watcher.open(sim);
    await watcher.command(projectFile('Cube_PLA.gcode.3mf', { flow_cali: 1, bed_leveling: 0, use_ams: 1 }));
    expect((await state(sim)).last_start).toMatchObject({ flags: { flow_cali: false, bed_leveling: false }, ignored_fields: ['bed_leveling', 'flow_cali', 'use_ams'], use_ams: true });
  });

  it('an H2D reports IDLE for a while after accepting a start; a second start meanwhile wins, and both count', async () => {
    const sim = await startSim({ model: 'H2D', startDelayS: 180 }); // 3 s at speed 60
    const watcher = await Watcher.open(sim);
    const from = watcher.messages.length;
    const first = projectFile('Cube_PLA.gcode.3mf', { url: 'ftp:///Cube_PLA.gcode.3mf' });
    expect(await watcher.command(first)).toMatchObject({ result: 'success' });
    await watcher.reports(5);
    expect(await state(sim)).toMatchObject({ gcode_state: 'IDLE', start_pending: true, prints_started: 1 });
    expect(watcher.messages.slice(from).some((m) => m.print?.gcode_state && m.print.gcode_state !== 'IDLE')).toBe(false);

    // A dispatcher that took IDLE for "not started" sends it again: the printer takes it (nothing is busy yet).
    const second = projectFile('Cube_PLA.gcode.3mf', { url: 'ftp:///Cube_PLA.gcode.3mf' });
    expect(await watcher.command(second)).toMatchObject({ result: 'success' });
    await watcher.gcodeState('PREPARE', from);
    expect(await state(sim)).toMatchObject({ start_pending: false, prints_started: 2, starts_while_busy: 0, subtask_id: second.subtask_id });
  });

  it('fails an H2D start that maps a filament to 254 with 0700_8012', async () => {
    const sim = await startSim({ model: 'H2D', startDelayS: 0 });
    const watcher = await Watcher.open(sim);
    const from = watcher.messages.length;
    await watcher.command(projectFile('Cube_PLA.gcode.3mf', { ams_mapping: [254] }));
    const failed = await watcher.gcodeState('FAILED', from);
    expect(failed.print_error).toBe(0x07008012);
  });
});

describe('Bambu simulator: uploads at printer speed', () => {
  it('a throttled upload arrives whole; a second upload at the same time fails and spoils the first', async () => {
    const sim = await startSim();
    await control(sim, '/faults', { transfer_bytes_per_sec: 3_000 }); // a few seconds for the 3MF
    const big = shortPrint();
    const first = ftpUpload(sim, 'First.gcode.3mf', big);
    const deadline = Date.now() + 5000;
    while ((await state(sim)).stats.ftp_active_uploads < 1) {
      if (Date.now() > deadline) throw new Error('the first upload never started');
      await new Promise((r) => setTimeout(r, 20));
    }
    const second = ftpUpload(sim, 'Second.gcode.3mf', shortPrint());
    await expect(second).rejects.toMatchObject({ code: 426 });
    await first; // 226: the client thinks all is well
    const stored = sim.storage.get('/First.gcode.3mf')!.data;
    expect(stored.length).toBe(big.length);
    expect(stored.equals(big)).toBe(false);
    expect(sim.storage.get('/Second.gcode.3mf')).toBeNull();
    expect((await state(sim)).stats).toMatchObject({ ftp_uploads: 1, ftp_upload_collisions: 1 });

    // The printer's check refuses the spoiled file.
    const watcher = await Watcher.open(sim);
    expect(await watcher.command(projectFile('First.gcode.3mf'))).toMatchObject({ result: 'fail', reason: expect.stringMatching(/verify failed/) });

    // One at a time, the same upload arrives intact.
    await control(sim, '/faults', { transfer_bytes_per_sec: 0 });
    await ftpUpload(sim, 'First.gcode.3mf', big);
    expect(sim.storage.get('/First.gcode.3mf')!.data.equals(big)).toBe(true);
  });
});
