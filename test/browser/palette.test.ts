/**
 * The Node-RED editor as `npm start` runs it, in headless Chromium (Debian's
 * package, through playwright-core): the palette has a "print farm" category
 * with all seven node types, their help is there, and the farm flow is on the
 * canvas with the nodes' status texts from the pack's catalogs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
const built = fs.existsSync(path.join(__dirname, '..', '..', 'dist', 'nodes', 'printfarm-printer.js'));
if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does)`);
if (!built) console.warn('palette test skipped: run `npm run build` first (npm test does)');
const describeBrowser = haveChromium && built ? describe : describe.skip;

const TYPES = ['printfarm-printer', 'printfarm-job-watcher', 'printfarm-file-download', 'printfarm-gcode-preview', 'printfarm-stats', 'printfarm-queue', 'printfarm-events'];

describeBrowser('the Node-RED editor started by npm start', () => {
  let nodeRed: RunningNodeRed;
  let browser: Browser;
  const userDir = tempDir('printfarm-editor-');
  beforeAll(async () => {
    [nodeRed, browser] = await Promise.all([
      startNodeRed({ userDir }),
      chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      }),
    ]);
  }, 40_000);
  afterAll(async () => {
    await browser?.close();
    expect(await nodeRed?.stop()).toBe(0);
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  test('the print farm palette holds all seven node types; the farm flow shows live status texts', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    const failed: string[] = [];
    page.on('console', (m) => {
      // Failed loads are checked below by address (Node-RED's editor asks the internet for the node catalogue).
      if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text());
    });
    page.on('requestfailed', (r) => failed.push(r.url()));
    await page.goto(nodeRed.url);
    await page.waitForSelector('.red-ui-palette-node[data-palette-type="printfarm-printer"]', { timeout: 20_000 });

    // The category and its six flow nodes, with their palette labels.
    const category = page.locator('#red-ui-palette-container-print_farm');
    await category.waitFor();
    expect(await category.locator('.red-ui-palette-header').innerText()).toMatch(/print farm/i);
    const inCategory = await category.locator('.red-ui-palette-node').evaluateAll((els) => els.map((e) => e.getAttribute('data-palette-type')));
    expect([...inCategory].sort()).toEqual([...TYPES].sort());
    expect(await category.locator('.red-ui-palette-node[data-palette-type="printfarm-job-watcher"] .red-ui-palette-label').innerText()).toBe('job watcher');

    // The config node type is registered too (config nodes have no palette entry).
    const registered = await page.evaluate((types) => {
      const RED = (globalThis as unknown as { RED: { nodes: { getType(t: string): { category: string; set: { module: string } } | undefined } } }).RED;
      return types.map((t) => {
        const def = RED.nodes.getType(t);
        return def ? [t, def.category, def.set.module] : [t, null, null];
      });
    }, ['printfarm-server', ...TYPES]);
    expect(registered).toEqual([
      ['printfarm-server', 'config', '@printfarm/node-red-printfarm'],
      ...TYPES.map((t) => [t, 'print farm', '@printfarm/node-red-printfarm']),
    ]);

    // The farm flow is deployed: its printer nodes show their state in words from the catalog.
    await page.locator('.red-ui-flow-node-status-label', { hasText: '0 of 0 printing' }).first().waitFor({ timeout: 20_000 });
    // Each printer node of the farm flow that names one of the demo's printers is unknown on npm start's empty farm.
    const demoPrinterNodes = (JSON.parse(fs.readFileSync(path.join(__dirname, '../../flows/farm.json'), 'utf8')) as Array<{ type: string; printer?: string }>).filter(
      (n) => n.type === 'printfarm-printer' && n.printer,
    ).length;
    expect(demoPrinterNodes).toBe(6);
    expect(await page.locator('.red-ui-flow-node-status-label', { hasText: 'unknown printer' }).count()).toBe(demoPrinterNodes);

    // Help from locales/en-US.
    const help = await page.evaluate(() => {
      const RED = (globalThis as unknown as { RED: { nodes: { getNodeHelp(t: string): string } } }).RED;
      return RED.nodes.getNodeHelp('printfarm-file-download');
    });
    expect(help).toContain('Urgent &gt; High &gt; Normal &gt; Low');
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/node-red-palette.png`, fullPage: false });
    expect(errors).toEqual([]);
    expect(failed.filter((u) => u.startsWith(nodeRed.url))).toEqual([]);
    await page.close();
  }, 60_000);

  test('in a German editor the palette category, palette labels and node labels are German', async () => {
    const page = await browser.newPage({ locale: 'de-DE' });
    await page.goto(nodeRed.url);
    await page.waitForSelector('.red-ui-palette-node[data-palette-type="printfarm-printer"]', { timeout: 20_000 });
    const category = page.locator('#red-ui-palette-container-print_farm');
    expect(await category.locator('.red-ui-palette-header').innerText()).toBe('Druckfarm');
    // Node-RED breaks palette labels into lines at spaces and hyphens (and puts spaces around those): compared without spaces.
    // German labels use a non-breaking hyphen (U+2011) and words that fit a line, so none is cut mid-word.
    const labels = await category.locator('.red-ui-palette-node').evaluateAll((els) => els.map((e) => [e.getAttribute('data-palette-type'), (e.querySelector('.red-ui-palette-label') as { textContent: string } | null)?.textContent?.replace(/\s+/g, '')]));
    expect(Object.fromEntries(labels)).toEqual({
      'printfarm-printer': 'Drucker',
      'printfarm-job-watcher': 'Aufträge',
      'printfarm-file-download': 'Dateienladen',
      'printfarm-gcode-preview': 'G\u2011CodeVorschau',
      'printfarm-stats': 'Statistik',
      'printfarm-queue': 'Warteliste',
      'printfarm-events': 'Ereignisse',
    });
    // The farm flow's unnamed job watcher, file download, stats and queue nodes on the canvas (SVG text).
    await page.locator('.red-ui-flow-node-label', { hasText: 'Farm-Statistik' }).first().waitFor({ timeout: 15_000 });
    const canvas = await page.locator('.red-ui-flow-node-label').evaluateAll((els) => els.map((e) => String(e.textContent).replace(/\s+/g, ' ').trim()));
    expect(canvas).toEqual(expect.arrayContaining(['Aufträge', 'Dateien laden', 'Farm-Statistik', 'Druckwarteschlange']));
    expect(canvas.filter((t) => /^(farm stats|jobs|print queue|file download)$/.test(t))).toEqual([]);
    if (process.env.SCREENSHOTS) {
      await page.screenshot({ path: `${process.env.SCREENSHOTS}/node-red-palette-de.png`, fullPage: false });
      await category.screenshot({ path: `${process.env.SCREENSHOTS}/node-red-palette-de-category.png` });
    }
    await page.close();
  }, 60_000);
});
