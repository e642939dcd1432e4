/**
 * The pack's edit dialogs in the real Node-RED editor (headless Chromium),
 * with `npm run demo`'s farm deployed: every node that takes a printer offers
 * the service's printers in a dropdown and flags an id the service does not
 * know; the values the service would refuse are flagged as they are typed;
 * the config node shows where the service really listens; two examples
 * imported one after the other bring two config nodes of their own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { until } from '../helpers/farm';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const root = path.join(__dirname, '..', '..');
const ready = fs.existsSync(CHROMIUM) && fs.existsSync(path.join(root, 'dist', 'nodes', 'printfarm-printer.js'));
if (!ready) console.warn('dialog tests skipped: they need Chromium and `npm run build`');
const describeBrowser = ready ? describe : describe.skip;

const DEMO_PRINTERS = ['sim-bambu-01', 'sim-bambu-02', 'sim-bambu-03', 'sim-prusa-01', 'sim-prusa-02', 'sim-klipper-01'];

/** The editor's global RED, typed loosely (it is the browser's). */
declare const RED: any; // eslint-disable-line @typescript-eslint/no-explicit-any
declare const $: any; // eslint-disable-line @typescript-eslint/no-explicit-any

describeBrowser('the edit dialogs in the Node-RED editor', () => {
  let nodeRed: RunningNodeRed;
  let browser: Browser;
  let page: Page;
  const userDir = tempDir('printfarm-dialogs-');

  beforeAll(async () => {
    [nodeRed, browser] = await Promise.all([
      startNodeRed({ userDir, demo: true }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] }),
    ]);
    // The config node knows the demo printers (what the dropdowns will offer).
    await until(async () => {
      const list = (await (await fetch(`${nodeRed.url}/printfarm/pf-farm-server/printers`)).json()) as { id: string }[];
      return list.length === DEMO_PRINTERS.length;
    }, 'the demo printers', 30_000);
    page = await browser.newPage();
    await page.goto(nodeRed.url);
    await page.waitForSelector('.red-ui-palette-node[data-palette-type="printfarm-printer"]', { timeout: 30_000 });
    await page.waitForFunction(() => !!RED.nodes.node('pf-jobs'));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    expect(await nodeRed?.stop()).toBe(0);
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  /** Opens a node's edit dialog and waits for its printer dropdown (if any) to be filled. */
  async function edit(id: string) {
    await page.evaluate((nodeId) => RED.editor.edit(RED.nodes.node(nodeId)), id);
    await page.waitForSelector('.red-ui-tray .red-ui-tray-body');
  }
  async function closeDialog() {
    await page.click('#node-dialog-cancel');
    await page.waitForSelector('.red-ui-tray', { state: 'detached' });
  }
  const optionsOf = () => page.$$eval('.printfarm-printer-select option', (els) => els.map((e) => (e as unknown as { value: string }).value));
  const invalid = (selector: string) => page.$eval(selector, (el) => el.classList.contains('input-error'));
  /** Types into a field as a user does (change and keyup fire) and says whether the editor marks it invalid. */
  async function flagged(selector: string, value: string): Promise<boolean> {
    await page.fill(selector, value);
    await page.locator(selector).dispatchEvent('change');
    await page.locator(selector).press('End');
    return page.$eval(selector, (el) => el.classList.contains('input-error'));
  }

  test.each([
    ['printfarm-printer', 'pf-p1'],
    ['printfarm-job-watcher', 'pf-jobs'],
    ['printfarm-file-download', 'pf-downloads'],
    ['printfarm-stats', 'pf-stats'],
  ])('%s: the printer dropdown lists the service printers; an unknown id is flagged and explained', async (_type, id) => {
    await edit(id);
    if (id === 'pf-stats') await page.evaluate(() => $('#node-input-scope').val('printer').trigger('change'));
    await until(async () => (await optionsOf()).length === DEMO_PRINTERS.length + 2 && (await optionsOf()), 'the printer list', 10_000);
    const options = await optionsOf();
    expect(options[0]).toBe(''); // all printers / from msg
    expect(options.slice(1, -1)).toEqual(DEMO_PRINTERS);
    // The rows every node shares (written once in printfarm-server.html) carry their labels from the node's catalog.
    for (const field of ['server', 'printer', 'name']) expect((await page.locator(`label[for="node-input-${field}"]`).innerText()).trim()).not.toBe('');
    await page.screenshot({ path: path.join(root, 'test', 'artifacts', `dialog-${_type}.png`) });

    // A listed printer: valid.
    await page.selectOption('.printfarm-printer-select', 'sim-prusa-01');
    expect(await page.inputValue('#node-input-printer')).toBe('sim-prusa-01');
    expect(await invalid('#node-input-printer')).toBe(false);
    expect(await page.locator('.printfarm-printer-warning').isVisible()).toBe(false);
    // "other id": a printer the service does not know is flagged, with the reason under the field.
    await page.selectOption('.printfarm-printer-select', { index: options.length - 1 });
    expect(await flagged('#node-input-printer', 'no-such-printer')).toBe(true);
    const warning = page.locator('.printfarm-printer-warning');
    expect(await warning.isVisible()).toBe(true);
    expect(await warning.innerText()).toMatch(/knows no printer "no-such-printer" \(it knows: sim-bambu-01, .*sim-klipper-01\)/);
    expect(await flagged('#node-input-printer', 'bad id!')).toBe(true);
    await closeDialog();
  }, 30_000);

  test('values the service would refuse are flagged in the dialogs', async () => {
    await edit('pf-jobs');
    expect(await flagged('#node-input-throttle', '-5')).toBe(true);
    expect(await flagged('#node-input-throttle', '30')).toBe(false);
    await closeDialog();

    await edit('pf-stats');
    expect(await flagged('#node-input-interval', '-1')).toBe(true);
    expect(await flagged('#node-input-interval', '300')).toBe(false);
    await closeDialog();

    // A gcode preview node dropped into the flow: max lines below the service's minimum of 10.
    await page.evaluate(() => {
      const def = RED.nodes.getType('printfarm-gcode-preview');
      const node: Record<string, unknown> = { id: RED.nodes.id(), type: 'printfarm-gcode-preview', z: RED.workspaces.active(), x: 100, y: 100, _def: def, wires: [[]], inputs: 1, outputs: 1, changed: true };
      for (const [k, v] of Object.entries(def.defaults as Record<string, { value: unknown }>)) node[k] = v.value;
      RED.nodes.add(node);
      RED.editor.edit(node);
    });
    await page.waitForSelector('#node-input-maxLines');
    expect(await flagged('#node-input-maxLines', '3')).toBe(true);
    expect(await flagged('#node-input-maxLines', '10')).toBe(false);
    expect(await flagged('#node-input-renderLines', '50')).toBe(true);
    await closeDialog();

    await page.evaluate(() => RED.editor.editConfig('', 'printfarm-server', 'pf-farm-server'));
    await page.waitForSelector('#node-config-input-pollInterval');
    expect(await flagged('#node-config-input-pollInterval', '0')).toBe(true);
    expect(await flagged('#node-config-input-pollInterval', '30')).toBe(false);
    await page.check('#node-config-input-expose');
    expect(await page.locator('#node-config-input-host').isVisible()).toBe(true);
    expect(await page.locator('.printfarm-exposed .form-tips').innerText()).toMatch(/no login/);
    expect(await flagged('#node-config-input-host', 'not a host!!')).toBe(true);
    expect(await flagged('#node-config-input-host', '192.168.1.5')).toBe(false);
    await page.selectOption('#node-config-input-mode', 'remote');
    expect(await flagged('#node-config-input-url', 'ftp://x')).toBe(true);
    expect(await flagged('#node-config-input-url', 'http://printfarm.local:8000')).toBe(false);
    // An environment variable (Node-RED substitutes it when the flow starts).
    expect(await flagged('#node-config-input-url', '${PRINTFARM_URL}')).toBe(false);
    await page.click('#node-config-dialog-cancel');
    await page.waitForSelector('#node-config-dialog-cancel', { state: 'detached' });
  }, 40_000);

  test('the queue dialog: the item comes from a typedInput, the printer from the dropdown, copies and priority within the service limits', async () => {
    // A queue node dropped into the flow, on the farm's config node.
    await page.evaluate(() => {
      const def = RED.nodes.getType('printfarm-queue');
      const node: Record<string, unknown> = { id: RED.nodes.id(), type: 'printfarm-queue', z: RED.workspaces.active(), x: 100, y: 160, _def: def, wires: [[]], inputs: 1, outputs: 1, changed: true };
      for (const [k, v] of Object.entries(def.defaults as Record<string, { value: unknown }>)) node[k] = v.value;
      node.server = 'pf-farm-server';
      RED.nodes.add(node);
      RED.editor.edit(node);
    });
    await page.waitForSelector('#node-input-copies');
    expect(await page.locator('.red-ui-typedInput-container').count()).toBe(1);
    expect(await page.$eval('#node-input-propertyType', (el) => (el as unknown as { value: string }).value)).toBe('msg');
    await until(async () => (await optionsOf()).length === DEMO_PRINTERS.length + 2, 'the printer list', 10_000);
    expect((await optionsOf()).slice(1, -1)).toEqual(DEMO_PRINTERS);
    await page.selectOption('.printfarm-printer-select', { index: (await optionsOf()).length - 1 });
    expect(await flagged('#node-input-printer', 'no-such-printer')).toBe(true);
    expect(await flagged('#node-input-printer', 'sim-bambu-02')).toBe(false);
    expect(await flagged('#node-input-copies', '0')).toBe(true);
    expect(await flagged('#node-input-copies', '1001')).toBe(true);
    expect(await flagged('#node-input-copies', '2.5')).toBe(true);
    expect(await flagged('#node-input-copies', '3')).toBe(false);
    expect(await flagged('#node-input-priority', '-1001')).toBe(true);
    expect(await flagged('#node-input-priority', '-5')).toBe(false);
    await closeDialog();
  }, 30_000);

  test('the config dialog shows the address the service really listens on (settings.js sets the port here)', async () => {
    await page.evaluate(() => RED.editor.editConfig('', 'printfarm-server', 'pf-farm-server'));
    const effective = page.locator('#printfarm-server-effective');
    await until(async () => /Running at/.test(await effective.innerText()), 'the effective address');
    const text = await effective.innerText();
    expect(text).toMatch(/Running at http:\/\/127\.0\.0\.1:\d+/);
    expect(text).not.toContain(':8000');
    expect(text).toMatch(/printfarmServerOptions\) sets .*port/);
    await page.click('#node-config-dialog-cancel');
    await page.waitForSelector('#node-config-dialog-cancel', { state: 'detached' });
  });

  test('two examples imported one after the other bring their own config nodes, none shared with the farm flow', async () => {
    const read = (f: string) => JSON.parse(fs.readFileSync(path.join(root, 'examples', f), 'utf8'));
    const before = await page.evaluate(() => {
      const ids: string[] = [];
      RED.nodes.eachConfig((n: { type: string; id: string }) => void (n.type === 'printfarm-server' && ids.push(n.id)));
      return ids;
    });
    for (const example of ['Job events.json', 'Farm statistics.json']) {
      await page.evaluate((flow) => RED.view.importNodes(flow), read(example));
    }
    // No "nodes already exist" question: nothing collided.
    expect(await page.locator('.red-ui-notification', { hasText: /already exist/i }).count()).toBe(0);
    const after = await page.evaluate(() => {
      const found: { id: string; port: unknown }[] = [];
      RED.nodes.eachConfig((n: { type: string; id: string; port: unknown }) => void (n.type === 'printfarm-server' && found.push({ id: n.id, port: n.port })));
      return found;
    });
    expect(after.map((n) => n.id).sort()).toEqual([...before, 'ex2-server', 'ex5-server'].sort());
    expect(after.find((n) => n.id === 'ex2-server')!.port).not.toBe(after.find((n) => n.id === 'ex5-server')!.port);
  });
});
