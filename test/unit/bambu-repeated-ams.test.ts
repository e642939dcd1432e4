/**
 * An X1's full reports repeat its AMS byte for byte: the repeated bytes are neither parsed nor walked again
 * (repeated-ams.ts), and what the service takes of each report is what parsing it whole gives. The
 * reference is a second BambuReports fed the same reports spaced as `"ams": {`, which no memory matches.
 */
import { BambuReports, type ReportOutcome } from '../../service/printers/bambu/reports';
import { realSizeReport } from '../../service/simulators/bambu/real-size';

type Json = Record<string, unknown>;

interface Look {
  percent?: number;
  nozzle?: number;
  /** remain of the last tray of the last unit. */
  remain?: number;
}

const tray = (unit: number, slot: number, remain: number): Json => ({
  id: String(slot),
  // Quotes and braces inside strings: the end of the AMS is found by its structure, not by the first brace.
  tray_type: unit === 1 && slot === 2 ? 'PLA "Basic" {matte}' : 'PETG',
  tray_color: 'FF8000FF',
  remain,
  tray_uuid: `UUID${unit}${slot}`,
  tray_weight: '1000',
});

function print(look: Look = {}): Json {
  const units = [0, 1, 2, 3].map((u) => ({ id: String(u), humidity: '4', temp: '24.5', tray: [0, 1, 2, 3].map((s) => tray(u, s, u === 3 && s === 3 ? (look.remain ?? 80) : 50)) }));
  const snapshot = { gcode_state: 'RUNNING', mc_percent: look.percent ?? 10, nozzle_temper: look.nozzle ?? 220, bed_temper: 60, ams: { ams: units, tray_now: '5' } };
  return { ...realSizeReport(snapshot), command: 'push_status', msg: 0, sequence_id: '1' };
}

const payload = (message: Json): Buffer => Buffer.from(JSON.stringify(message));
const full = (look: Look = {}, extra: Json = {}): Buffer => payload({ print: { ...print(look), ...extra } });
/** The same bytes spaced so that no remembered AMS matches them: parsed whole. */
const spaced = (bytes: Buffer): Buffer => Buffer.from(bytes.toString('utf8').replace(/"ams":\{/g, '"ams": {'));

/**
 * Takes each payload on the service's path and on the reference's, expecting the same outcome and state.
 * `parsed`: per payload, what JSON.parse was given: 'whole' (every byte) or 'stood in' (the AMS left out).
 */
function takeBoth(reports: BambuReports, reference: BambuReports, payloads: Buffer[]): { outcomes: ReportOutcome[]; parsed: string[] } {
  const parse = jest.spyOn(JSON, 'parse');
  const outcomes: ReportOutcome[] = [];
  const parsed: string[] = [];
  try {
    for (const bytes of payloads) {
      parse.mockClear();
      const outcome = reports.take(bytes, 'X1C-1');
      parsed.push(parse.mock.calls.map(([text]) => (text.length === bytes.length ? 'whole' : text.length < bytes.length - 2000 ? 'stood in' : 'other')).join(', '));
      expect(outcome).toEqual(reference.take(spaced(bytes), 'X1C-1'));
      expect(reports.current).toEqual(reference.current);
      outcomes.push(outcome);
    }
  } finally {
    parse.mockRestore();
  }
  return { outcomes, parsed };
}

describe('a repeated AMS in Bambu full reports', () => {
  it('is parsed once, and each report gives what parsing it whole gives, through a change and back', () => {
    const looks: Look[] = [{}, { nozzle: 221 }, { percent: 11 }, { remain: 79 }, { remain: 79, nozzle: 230 }, { remain: 80 }, { nozzle: 225 }];
    const payloads = looks.map((look) => full(look));
    const { outcomes, parsed } = takeBoth(new BambuReports(), new BambuReports(), payloads);
    // Only the first report, and the one whose AMS changed, parse every byte.
    expect(parsed).toEqual(['whole', 'stood in', 'stood in', 'whole', 'stood in', 'whole', 'stood in']);
    expect(outcomes.every((o) => o.kind === 'taken')).toBe(true);
    // Every report changed something shown; the last tray's remain follows the AMS.
    const remains = outcomes.map((o) => (o.kind === 'taken' ? o.state?.materials?.at(-1)?.remaining_percent : undefined));
    expect(remains).toEqual([80, 80, 80, 79, 79, 80, 80]);
  });

  it('is not stood in for when the same bytes come first somewhere else, nor in a message that is no status report', () => {
    const reports = new BambuReports();
    const reference = new BambuReports();
    const first = full();
    const ams = print().ams;
    // The remembered bytes first under an ignored key, while the report's own AMS changed.
    const decoy = payload({ print: { decoy: { ams }, ...print({ remain: 30 }) } });
    // The same under a top-level key before print: at the same depth as print.ams, but not print's.
    const topDecoy = payload({ decoy: { ams }, print: print({ remain: 30, nozzle: 232 }) });
    const command = payload({ print: { command: 'ams_filament_setting', ams, result: 'success' } });
    const payloads = [first, command, first, decoy, full({ nozzle: 230 }), full({ nozzle: 231 }), topDecoy, full({ nozzle: 233 }), full({ nozzle: 234 })];
    const { outcomes, parsed } = takeBoth(reports, reference, payloads);
    expect(outcomes[1]).toEqual({ kind: 'taken', reply: { command: 'ams_filament_setting', ams, result: 'success' }, state: null });
    // The command and the decoy are parsed again whole. The decoy's bytes are not remembered for its own AMS:
    // the next report, whose AMS is those bytes, is parsed whole too (and shows them, as the reference does).
    expect(parsed).toEqual(['whole', 'stood in, whole', 'whole', 'stood in, whole', 'whole', 'stood in', 'stood in, whole', 'whole', 'stood in']);
    expect(outcomes.map((o) => (o.kind === 'taken' ? o.state?.materials?.at(-1)?.remaining_percent : undefined))).toEqual([80, undefined, undefined, 30, 80, 80, 30, 80, 80]);
  });

  it('counts the values it stands for: the bound falls where it falls for the whole report, and a refusal forgets it', () => {
    const withJunk = (n: number) => full({ nozzle: 240 }, { junk: new Array(n).fill(0) });
    // The smallest junk list the reference refuses.
    let low = 10_000;
    let high = 20_000;
    while (high - low > 1) {
      const mid = (low + high) >> 1;
      if (new BambuReports().take(spaced(withJunk(mid)), null).kind === 'refused') high = mid;
      else low = mid;
    }
    for (const n of [low, high]) {
      const reports = new BambuReports();
      const reference = new BambuReports();
      const { outcomes, parsed } = takeBoth(reports, reference, [full(), withJunk(n), full({ nozzle: 241 }), full({ nozzle: 242 })]);
      expect(outcomes[1].kind).toBe(n === high ? 'refused' : 'taken');
      // After a refusal the next report is parsed whole, and remembered again.
      expect(parsed).toEqual(['whole', 'stood in', n === high ? 'whole' : 'stood in', 'stood in']);
    }
  });
});
