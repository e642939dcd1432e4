import { DigestSession, digestResponse, parseDigestChallenge } from '../../service/printers/prusa/digest';
import { encodePath, mapPrusaState, mergePrusaState, modelOf, type PrusaStatus } from '../../service/printers/prusa/state';
import { shortName } from '../../service/simulators/prusa/files';
import type { PrinterState } from '../../service/printers/driver';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const version = { api: '2.0.0', server: '2.1.2', text: 'PrusaLink', firmware: '6.2.4+8808', hostname: 'prusa-core-one' };
const info = { name: 'Core One #1', hostname: 'prusa-core-one', mmu: false, active_camera: true, serial: 'X' };

describe('PrusaLink printer states become machine states', () => {
  test.each([
    ['IDLE', 'idle'],
    ['READY', 'idle'],
    ['BUSY', 'busy'],
    ['PRINTING', 'printing'],
    ['PAUSED', 'paused'],
    ['FINISHED', 'finished'],
    ['STOPPED', 'stopped'],
    ['ERROR', 'error'],
    ['ATTENTION', 'error'],
    ['printing', 'printing'],
    ['SOMETHING_NEW', 'busy'],
  ])('%s -> %s', (raw, expected) => {
    expect(mapPrusaState(raw)).toBe(expected);
  });
});

describe('a status poll becomes a PrinterState', () => {
  const printing: PrusaStatus = {
    printer: { state: 'PRINTING', temp_nozzle: 214.9, target_nozzle: 215, temp_bed: 59.5, target_bed: 60, axis_z: 0.5, flow: 95, speed: 100 },
    job: { id: 420, progress: 42, time_remaining: 520, time_printing: 526 },
    storage: { path: '/usb/', name: 'usb', read_only: false },
  };
  const job = {
    id: 420,
    state: 'PRINTING',
    progress: 42,
    time_remaining: 520,
    time_printing: 526,
    file: {
      name: 'SHAPE-~1.BGC',
      display_name: 'Shape-Box_0.4n_0.2mm_PLA_MK4S_4m.bgcode',
      path: '/usb',
      size: 123456,
      m_timestamp: 1700000000,
      refs: { download: '/usb/SHAPE-~1.BGC' },
    },
  };

  test('a printing Core One: temperatures, targets, job, firmware, model, capabilities', () => {
    const s = mergePrusaState(null, { status: printing, job, version, info, now: NOW });
    expect(s).toEqual<PrinterState>({
      state: 'printing',
      raw_state: 'PRINTING',
      temperatures: { nozzle: 214.9, bed: 59.5, nozzle_target: 215, bed_target: 60 },
      job: {
        name: 'Shape-Box_0.4n_0.2mm_PLA_MK4S_4m.bgcode',
        file: '/usb/SHAPE-~1.BGC',
        display_name: 'Shape-Box_0.4n_0.2mm_PLA_MK4S_4m.bgcode',
        progress: 42,
        layer_current: null,
        layer_total: null,
        remaining_seconds: 520,
        started_at: new Date(NOW - 526_000).toISOString(),
        printer_job_id: '420',
        time_printing: 526,
      },
      error: null,
      firmware_version: '6.2.4+8808',
      model: 'Core One',
      capabilities: { has_camera: true, has_ams: false, supports_remote_control: true },
      attention: [],
    });
  });

  test('a partial report keeps the last known temperatures, progress and file, and the start time does not drift', () => {
    const first = mergePrusaState(null, { status: printing, job, version, info, now: NOW });
    const partial = mergePrusaState(first, {
      status: { printer: { state: 'PRINTING', axis_z: 0.7 } },
      job: undefined,
      version,
      info,
      now: NOW + 5000,
    });
    expect(partial.temperatures).toEqual(first.temperatures);
    expect(partial.job).toEqual(first.job);
    const later = mergePrusaState(partial, {
      status: { printer: { state: 'PRINTING' }, job: { id: 420, progress: 50, time_printing: 600 } },
      job: undefined,
      version,
      info,
      now: NOW + 80_000,
    });
    expect(later.job).toMatchObject({ progress: 50, time_printing: 600, remaining_seconds: 520, file: '/usb/SHAPE-~1.BGC' });
    expect(later.job?.started_at).toBe(first.job?.started_at);
  });

  test('no job (204) clears the job; a new job id starts a new job', () => {
    const first = mergePrusaState(null, { status: printing, job, version, info, now: NOW });
    const idle = mergePrusaState(first, { status: { printer: { state: 'IDLE' } }, job: null, version, info, now: NOW });
    expect(idle.state).toBe('idle');
    expect(idle.job).toBeNull();
    const next = mergePrusaState(first, {
      status: { printer: { state: 'PRINTING' }, job: { id: 421, progress: 0, time_printing: 0 } },
      job: undefined,
      version,
      info,
      now: NOW,
    });
    expect(next.job).toMatchObject({ printer_job_id: '421', progress: 0, file: null, name: 'job 421', started_at: new Date(NOW).toISOString() });
  });

  test('ERROR keeps the job (it failed) and says why; ATTENTION is an error with a readable message', () => {
    const first = mergePrusaState(null, { status: printing, job, version, info, now: NOW });
    const failed = mergePrusaState(first, {
      status: { printer: { state: 'ERROR', status_printer: { ok: false, message: 'Thermal runaway' } }, job: { id: 420 } },
      job: { ...job, state: 'ERROR' },
      version,
      info,
      now: NOW,
    });
    expect(failed.state).toBe('error');
    expect(failed.error).toEqual({ code: 'ERROR', message: 'Printer error: Thermal runaway' });
    expect(failed.job?.printer_job_id).toBe('420');
    const attention = mergePrusaState(first, { status: { printer: { state: 'ATTENTION' } }, job, version, info, now: NOW });
    expect(attention.state).toBe('error');
    expect(attention.error?.code).toBe('ATTENTION');
    expect(attention.error?.message).toMatch(/needs attention/);
  });

  test('negative time_remaining (unknown on Buddy) becomes null', () => {
    const s = mergePrusaState(null, { status: { printer: { state: 'PRINTING' }, job: { id: 1, time_remaining: -1 } }, job: undefined, version, info, now: NOW });
    expect(s.job?.remaining_seconds).toBeNull();
  });

  test('the model comes from the printer when it says it', () => {
    expect(modelOf({ printer: 'MK4S' }, null)).toBe('MK4S');
    expect(modelOf({ printer: '1.3.1' }, { hostname: 'prusa-mk4s' })).toBe('MK4S');
    expect(modelOf(null, { hostname: 'prusa-core-one' })).toBe('Core One');
    expect(modelOf(null, { hostname: 'my-printer' })).toBeNull();
  });

  test('paths are percent-encoded per segment', () => {
    expect(encodePath('/usb/SHAPE-~1.BGC')).toBe('/usb/SHAPE-~1.BGC');
    expect(encodePath('usb//my folder/a#b.gcode')).toBe('/usb/my%20folder/a%23b.gcode');
  });
});

describe('HTTP Digest responses', () => {
  // RFC 2069 section 2.4 example. The RFC prints e966c932...; that value is a known erratum, the correct MD5 is below.
  const rfc = { username: 'Mufasa', password: 'CircleOfLife', realm: 'testrealm@host.com', nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093' };

  test('RFC 2069 (no qop, as Buddy): MD5(HA1:nonce:HA2)', () => {
    expect(digestResponse({ ...rfc, method: 'GET', uri: '/dir/index.html' })).toBe('1949323746fe6a43ef61f9606e7febea');
  });

  test('RFC 2617 qop=auth example (its password is "Circle Of Life")', () => {
    expect(digestResponse({ ...rfc, password: 'Circle Of Life', method: 'GET', uri: '/dir/index.html', qop: 'auth', nc: '00000001', cnonce: '0a4f113b' })).toBe(
      '6629fae49393a05397450978507c4ef1',
    );
  });

  test("Buddy's challenge parses, stale flag included", () => {
    expect(parseDigestChallenge('Digest realm="Printer API", nonce="0123456789abcdef", stale=true')).toEqual({
      realm: 'Printer API',
      nonce: '0123456789abcdef',
      qop: [],
      opaque: null,
      algorithm: null,
      stale: true,
    });
    expect(parseDigestChallenge(['Basic realm="x"', 'Digest realm="Administrator", qop="auth,auth-int", nonce="n1"'])?.qop).toEqual(['auth', 'auth-int']);
    expect(parseDigestChallenge('Basic realm="x"')).toBeNull();
    expect(parseDigestChallenge(undefined)).toBeNull();
  });

  test('a session signs without qop for Buddy and with nc/cnonce when qop=auth is offered', () => {
    const buddy = new DigestSession(parseDigestChallenge('Digest realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", stale=false')!, 'Mufasa', 'CircleOfLife');
    const header = buddy.authorization('GET', '/dir/index.html');
    expect(header).toContain('response="1949323746fe6a43ef61f9606e7febea"');
    expect(header).not.toContain('qop');
    const pi = new DigestSession(
      parseDigestChallenge('Digest realm="testrealm@host.com", qop="auth", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"')!,
      'Mufasa',
      'Circle Of Life',
      () => '0a4f113b',
    );
    const signed = pi.authorization('GET', '/dir/index.html');
    expect(signed).toContain('nc=00000001');
    expect(signed).toContain('response="6629fae49393a05397450978507c4ef1"');
    expect(signed).toContain('opaque="5ccc069c403ebaf9f0171e9517f40e41"');
    expect(pi.authorization('GET', '/dir/index.html')).toContain('nc=00000002');
  });
});

describe('FAT short names, as Buddy shows files', () => {
  const none = () => false;
  test.each([
    ['Shape-Box_0.4n_0.2mm_PLA_MK4S_4m.bgcode', 'SHAPE-~1.BGC'],
    ['cube_0.2mm_PLA_MK4S_12m.gcode', 'CUBE_0~1.GCO'],
    ['Cube_PLA.gcode.3mf', 'CUBE_P~1.3MF'],
    ['cube_20mm.stl', 'CUBE_2~1.STL'],
    ['BENCHY.GCO', 'BENCHY.GCO'],
    ['my model.gcode', 'MYMODE~1.GCO'],
  ])('%s -> %s', (long, short) => {
    expect(shortName(long, none)).toBe(short);
  });

  test('a taken short name gets the next number', () => {
    const taken = new Set(['SHAPE-~1.BGC']);
    expect(shortName('Shape-Box_other.bgcode', (s) => taken.has(s))).toBe('SHAPE-~2.BGC');
  });
});
