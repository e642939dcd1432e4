/**
 * printfarm-events against an embedded service and a simulated Bambu printer: an AMS runout becomes one
 * message in Bambu Lab's words (English and German), once per cause, filtered by kind and printer.
 */
import { cancelPrint, collect, control, helper, NODES, nodeTestFarm, printerCredentials, SERVICE_OPTIONS, simState, until, withRegisteredPrinter, type FlowNode } from '../helpers/node-red';

describe('printfarm-events', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 0, speed: 100 }, SERVICE_OPTIONS, (sims) => cancelPrint(sims.printers[0].control_url));
  const printer = () => farm.printers[0].printer as Record<string, unknown> & { id: string; name: string };
  const withPrinter = (nodes: FlowNode[]): FlowNode[] => withRegisteredPrinter(farm, nodes);

  async function printAndFail(control_url: string) {
    const file = (await simState(control_url)).files.find((f) => /\.3mf$/.test(f))!;
    await control(control_url, 'print', { file });
    await until(async () => /PREPARE|RUNNING/.test(String(((await simState(control_url)) as unknown as { gcode_state: string }).gcode_state)), 'started');
    await control(control_url, 'fail');
  }

  test('an AMS runout is one message in the vendor\'s words per cause, in English and German; filters hold', async () => {
    await helper.load(
      NODES,
      withPrinter([
        { id: 'english', type: 'printfarm-events', server: 'srv', printer: '', kinds: 'attention', language: 'en', wires: [['out']] },
        { id: 'german', type: 'printfarm-events', server: 'srv', printer: printer().id, kinds: 'attention', language: 'de', wires: [['outDe']] },
        { id: 'other', type: 'printfarm-events', server: 'srv', printer: 'another-printer', kinds: '', language: 'en', wires: [['outOther']] },
        { id: 'done', type: 'printfarm-events', server: 'srv', printer: '', kinds: 'print_finished', language: 'en', wires: [['outDone']] },
        { id: 'out', type: 'helper' },
        { id: 'outDe', type: 'helper' },
        { id: 'outOther', type: 'helper' },
        { id: 'outDone', type: 'helper' },
      ]),
      printerCredentials(farm, 0, 'reg'),
    );
    const out = collect(helper.getNode('out'));
    const outDe = collect(helper.getNode('outDe'));
    const outOther = collect(helper.getNode('outOther'));
    const outDone = collect(helper.getNode('outDone'));
    const { control_url } = farm.printers[0];
    await collect(helper.getNode('online')).next((m) => (m.payload as { status?: string }).status === 'online');

    await printAndFail(control_url);
    const first = await out.next(() => true, 15_000);
    expect(first).toMatchObject({
      topic: `${printer().name} needs attention`,
      payload: 'AMS A Slot 1 filament has run out. Please insert a new filament.',
      kind: 'attention',
      severity: 'serious',
      printer_id: printer().id,
      data: { attention: [expect.objectContaining({ code: '0700_2000_0002_0001', source: 'hms' }), expect.objectContaining({ code: '0700_8011' })] },
    });
    expect(await outDe.next(() => true)).toMatchObject({
      topic: `${printer().name} braucht Aufmerksamkeit`,
      payload: 'AMS A Slot 1 Filament ist aufgebraucht. Bitte legen Sie ein neues Filament ein.',
    });

    // The same runout again after a new print is a new cause: a second message, and only that.
    await printAndFail(control_url);
    await until(() => out.messages.length >= 2 && outDe.messages.length >= 2, 'second runout told', 15_000);
    expect(out.messages).toHaveLength(2);
    expect(outDe.messages).toHaveLength(2);
    const cause = (m: Record<string, unknown>) => (m.notification as { cause: string }).cause;
    expect(cause(out.messages[1])).not.toBe(cause(out.messages[0]));
    expect(outOther.messages).toEqual([]);
    expect(outDone.messages).toEqual([]);
  });
});
