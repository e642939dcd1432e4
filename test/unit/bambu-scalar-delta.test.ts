/**
 * The common delta (a `print` of scalars, temperatures moved and nothing else) is taken without picking,
 * measuring or merging (merge.ts takeScalarDelta). Whatever a printer sends, each report must give what the
 * general way gives: the reference is fed the same messages with one more top-level key, which the shortcut
 * never takes.
 */
import { BambuReports } from '../../service/printers/bambu/reports';
import { takeScalarDelta } from '../../service/printers/bambu/state';

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const first = {
  command: 'push_status',
  msg: 0,
  gcode_state: 'IDLE',
  print_error: 0,
  nozzle_temper: 25,
  bed_temper: 24.5,
  chamber_temper: 24,
  nozzle_target_temper: 0,
  bed_target_temper: 0,
  mc_percent: 0,
  subtask_name: 'benchy',
  hms: [],
  ams: { ams: [{ id: '0', tray: [{ id: '0', tray_type: 'PLA', remain: 50 }] }], tray_now: '0' },
};

function delta(next: () => number): Record<string, unknown> {
  const pick = <T>(options: T[]): T => options[Math.floor(next() * options.length)];
  const print: Record<string, unknown> = { command: 'push_status', msg: 1, sequence_id: String(Math.floor(next() * 1000)) };
  // Mostly temperatures, sometimes what else a printer says.
  if (next() < 0.9) print.nozzle_temper = pick([25, 25.5, 200, 219.96875, 220]);
  if (next() < 0.5) print.bed_temper = pick([24.5, 60, 59.875]);
  if (next() < 0.2) print.nozzle_target_temper = pick([0, 220, null]);
  if (next() < 0.1) print.gcode_state = pick(['IDLE', 'RUNNING', 'FAILED', 'FINISH', 'PREPARE']);
  if (next() < 0.1) print.print_error = pick([0, 50348044, 0x07008011]);
  if (next() < 0.1) print.mc_percent = pick([0, 10, 55]);
  if (next() < 0.05) print.subtask_name = pick(['benchy', 'x'.repeat(2000), '']);
  if (next() < 0.05) print.wifi_signal = pick(['-40dBm', '-60dBm']);
  if (next() < 0.05) print.hms = pick([[], [{ attr: 0x07000200, code: 0x00020001 }]]);
  if (next() < 0.03) print.ams = { ams: [{ id: '0', tray: [{ id: '0', remain: pick([50, 49]) }] }] };
  if (next() < 0.03) print.junk = pick([{ deep: [1, 2] }, 'scalar', null]);
  if (next() < 0.03) print.msg = 0;
  if (next() < 0.03) print.nozzle_temper = pick(['hot', true]);
  return print;
}

describe('a delta of scalars taken without the general walk', () => {
  it('gives every report what the general way gives, over 3000 random reports of three printers', () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const reports = new BambuReports();
      const reference = new BambuReports();
      const send = (print: Record<string, unknown>) => {
        const outcome = reports.take(Buffer.from(JSON.stringify({ print })), 'P1S-1');
        expect(outcome).toEqual(reference.take(Buffer.from(JSON.stringify({ print, general: 1 })), 'P1S-1'));
        expect(reports.current).toEqual(reference.current);
      };
      send(first);
      for (let i = 0; i < 1000; i++) send(delta(next));
    }
  });

  it('takes only a print of scalars whose kept values are held but temperatures', () => {
    const reports = new BambuReports();
    reports.take(Buffer.from(JSON.stringify({ print: first })), null);
    const tracked = (reports as unknown as { tracked: Parameters<typeof takeScalarDelta>[0] }).tracked;
    const status = (print: object) => ({ command: 'push_status', msg: 1, ...print });
    const moved = takeScalarDelta(tracked, { print: status({ nozzle_temper: 30 }) }, status({ nozzle_temper: 30 }));
    expect(moved).toMatchObject({ temperaturesMoved: true, print: tracked.print });
    expect(tracked.print.nozzle_temper).toBe(30);
    // Nothing moved: the same tracked object as before.
    expect(takeScalarDelta(moved!, { print: status({ nozzle_temper: 30 }) }, status({ nozzle_temper: 30 }))).toMatchObject({ temperaturesMoved: false });
    for (const print of [{ mc_percent: 5 }, { hms: [] }, { junk: {} }, { msg: 0 }, { subtask_name: 'x'.repeat(2000) }, { nozzle_temper: 'hot' }]) {
      expect(takeScalarDelta(tracked, { print: status(print) }, status(print))).toBeNull();
    }
    expect(takeScalarDelta(tracked, { print: status({}), info: 1 }, status({}))).toBeNull();
  });
});
