import { AttentionBook, farmOrder } from '../../service/attention/book';
import { EventBus } from '../../service/events';
import { splitVendorText } from '../../service/printers/attention';
import { describeHms, describePrintError } from '../../service/printers/bambu/hms-text';
import { AttentionMemo, attentionOf } from '../../service/printers/bambu/state';
import { mergePrusaState } from '../../service/printers/prusa/state';

describe('Bambu codes in the vendor\'s words', () => {
  it('reads an HMS code as Bambu Lab\'s English and German sentence, with what to do apart', () => {
    const cause = describeHms(0x07002000, 0x00020001, 'P1S');
    expect(cause).toMatchObject({ code: '0700_2000_0002_0001', severity: 'serious', source: 'hms' });
    expect(cause.text.en).toEqual({ message: 'AMS A Slot 1 filament has run out.', action: 'Please insert a new filament.' });
    expect(cause.text.de).toEqual({ message: 'AMS A Slot 1 Filament ist aufgebraucht.', action: 'Bitte legen Sie ein neues Filament ein.' });
  });

  it('uses the wording Bambu Lab publishes for the printer model', () => {
    expect(describeHms(0x03000200, 0x00010001, 'H2D').text.en.message).toBe('The right nozzle temperature is abnormal; the heater may have a short circuit.');
    expect(describeHms(0x03000200, 0x00010001, 'P1S').text.en.message).toBe('The nozzle temperature is abnormal; the heater may have a short circuit.');
  });

  it('points to the wiki when the sentence says nothing to do, and keeps module + severity for unknown codes', () => {
    expect(describeHms(0x03000100, 0x00010003, null).text.en.action).toBe('See https://wiki.bambulab.com/en/x1/troubleshooting/hmscode/0300_0100_0001_0003');
    const unknown = describeHms(0x07ff2000, 0x0001ff01, null);
    expect(unknown).toMatchObject({ code: '07FF_2000_0001_FF01', severity: 'fatal' });
    expect(unknown.text.en.message).toBe('AMS reports HMS 07FF_2000_0001_FF01 (fatal)');
    expect(describePrintError(0x07008011, null).text.en).toEqual({ message: 'AMS filament ran out.', action: 'Please insert a new filament into the same AMS slot.' });
    expect(describePrintError(0x0fff0fff, null).text.en.message).toBe('Print error 0FFF_0FFF');
  });

  it('splits "Please ..." off as the action and keeps a sentence without one whole', () => {
    expect(splitVendorText('The nozzle is clogged.', 'x')).toEqual({ message: 'The nozzle is clogged.', action: 'x' });
    expect(splitVendorText('Filament is tangled. Please check it.', 'x')).toEqual({ message: 'Filament is tangled.', action: 'Please check it.' });
  });

  it('lists HMS worst first, then print_error; a user cancel is no cause; the memo keeps the same list while hms and print_error stay', () => {
    const print = { hms: [{ attr: 0x0c000300, code: 0x00040001 }, { attr: 0x07002000, code: 0x00020001 }], print_error: 0x07008011 };
    expect(attentionOf(print, null).map((c) => [c.code, c.severity])).toEqual([
      ['0700_2000_0002_0001', 'serious'],
      ['0700_8011', 'serious'],
      ['0C00_0300_0004_0001', 'info'],
    ]);
    expect(attentionOf({ hms: [], print_error: 50348044 }, null)).toEqual([]);
    const memo = new AttentionMemo();
    const first = memo.of(print, null);
    expect(memo.of({ ...print, nozzle_temper: 200 }, null)).toBe(first);
    // A full report with the same entries (a new array) keeps the list too (no new event downstream).
    expect(memo.of({ hms: print.hms.map((e) => ({ ...e })), print_error: print.print_error }, null)).toBe(first);
    expect(memo.of({ hms: [], print_error: 0 }, null)).toEqual([]);
  });
});

describe('PrusaLink ATTENTION and ERROR', () => {
  it('carries the printer\'s message and keeps the list while the printer says the same', () => {
    const poll = (state: string, message?: string, prev = null as ReturnType<typeof mergePrusaState> | null) =>
      mergePrusaState(prev, { status: { printer: { state, ...(message ? { status_printer: { ok: false, message } } : {}) } }, job: undefined, version: null, info: null, now: 0 });
    const first = poll('ATTENTION', 'Filament runout');
    expect(first.attention).toEqual([
      expect.objectContaining({ code: 'ATTENTION', severity: 'serious', source: 'prusalink', text: expect.objectContaining({ en: expect.objectContaining({ message: 'The printer needs attention: Filament runout' }) }) }),
    ]);
    const again = poll('ATTENTION', 'Filament runout', first);
    expect(again.attention).toBe(first.attention);
    expect(poll('ERROR', 'Thermal runaway', again).attention?.[0]).toMatchObject({ code: 'ERROR', severity: 'fatal' });
    expect(poll('IDLE', undefined, again).attention).toEqual([]);
  });
});

describe('the attention book', () => {
  it('announces a cause once when it appears and once when it clears, with since kept', () => {
    const bus = new EventBus();
    const frames: unknown[] = [];
    bus.on('printer_attention', (e) => frames.push(e));
    let clock = '2026-01-01T00:00:00.000Z';
    const book = new AttentionBook(bus, () => 'en', () => clock);
    const runout = attentionOf({ hms: [{ attr: 0x07002000, code: 0x00020001 }] }, null);
    book.report('p1', runout);
    book.report('p1', runout);
    clock = '2026-01-01T00:05:00.000Z';
    const both = attentionOf({ hms: [{ attr: 0x07002000, code: 0x00020001 }], print_error: 0x07008011 }, null);
    book.report('p1', both);
    expect(frames).toHaveLength(2);
    expect(book.of('p1').map((e) => [e.code, e.since])).toEqual([
      ['0700_2000_0002_0001', '2026-01-01T00:00:00.000Z'],
      ['0700_8011', '2026-01-01T00:05:00.000Z'],
    ]);
    expect(frames[1]).toMatchObject({ printer_id: 'p1', appeared: [{ code: '0700_8011' }], cleared: [] });
    book.report('p1', []);
    expect(frames[2]).toMatchObject({ attention: [], cleared: [{ code: '0700_2000_0002_0001' }, { code: '0700_8011' }] });
    book.report('p2', attentionOf({ hms: [{ attr: 0x03000100, code: 0x00010001 }] }, null));
    expect(farmOrder(book.all().flatMap((p) => p.entries)).map((e) => e.severity)).toEqual(['fatal']);
    book.forget('p2');
    expect(book.all()).toEqual([]);
    expect(frames).toHaveLength(5);
  });

  it('speaks German when the language setting says so', () => {
    const book = new AttentionBook(new EventBus(), () => 'de');
    book.report('p1', attentionOf({ hms: [{ attr: 0x07002000, code: 0x00020001 }] }, null));
    expect(book.of('p1')[0]).toMatchObject({ message: 'AMS A Slot 1 Filament ist aufgebraucht.', action: 'Bitte legen Sie ein neues Filament ein.' });
  });
});
