/**
 * The statistics page's "Utilisation per printer" chart of a farm of 60 (or
 * UTIL_PRINTERS) printers, in headless Chromium: the chart draws every printer's name under
 * its bar (ECharts' automatic label interval drew only every other one, or
 * fewer, once the names no longer fitted side by side), and the names do not
 * run into each other. The chart's own axis model says which labels it
 * draws (the widget draws to a canvas); the screenshot is for a person.
 *
 * Screenshots go to test/artifacts/ (git-ignored).
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { until } from '../helpers/farm';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = path.join(__dirname, '..', '..');
const haveChromium = fs.existsSync(CHROMIUM);
const built = fs.existsSync(path.join(ROOT, 'dist', 'nodes', 'printfarm-server.js'));
if (!haveChromium) console.warn(`utilisation chart test skipped: no Chromium at ${CHROMIUM}`);
if (!built) console.warn('utilisation chart test skipped: run `npm run build` first (npm test does)');
const describeBrowser = haveChromium && built ? describe : describe.skip;

const ARTIFACTS = path.join(ROOT, 'test', 'artifacts');
const PRINTERS = Number(process.env.UTIL_PRINTERS ?? 60);
const nameOf = (i: number) => `Bambu P1S #${String(i + 1).padStart(2, '0')}`;

/** What the chart draws on its category axis: the labels (and their boxes) ECharts lays out. */
interface AxisView {
  labels: string[];
  boxes: { x: number; y: number; width: number; height: number; text: string }[];
}

describeBrowser(`the utilisation chart of a farm of ${PRINTERS} printers`, () => {
  let nodeRed: RunningNodeRed;
  let browser: Browser;
  let api: string;
  const userDir = tempDir('printfarm-util-chart-');

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    [nodeRed, browser] = await Promise.all([
      startNodeRed({ userDir }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] }),
    ]);
    api = (await until(() => /Printfarm API\s+(http\S+)/.exec(nodeRed.output())?.[1], 'the service address', 20_000)).replace(/\/$/, '');
    // Printers that never answer (port 9): the chart needs their names, not their prints.
    for (let i = 0; i < PRINTERS; i++) {
      const body = { id: `util-${i + 1}`, name: nameOf(i), type: 'bambu_lab', model: 'P1S', ip_address: '127.0.0.1', serial_number: `01P00A${String(i).padStart(9, '0')}`, access_code: '12345678', mqtt_port: 9, ftps_port: 9 };
      const res = await fetch(`${api}/printers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    expect(await nodeRed?.stop()).toBe(0);
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  test('every printer\'s name is drawn under its bar, none over another', async () => {
    const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
    // Dashboard 2.0 keeps each chart's component on window.uiCharts under Cypress: the test reads ECharts' model there.
    await page.addInitScript(() => ((globalThis as unknown as { Cypress: object }).Cypress = {}));
    await page.goto(`${nodeRed.url}/dashboard/statistics`);
    const view = await until(
      () =>
        page
          .evaluate(() => {
            type Label = { formattedLabel: string };
            type Axis = { getViewLabels(): Label[]; scale: { getOrdinalMeta(): { categories: string[] } } };
            type Chart = { getModel(): { getComponent(type: string, i: number): { axis: Axis } }; getZr(): { storage: { getDisplayList(): { type: string; style?: { text?: string }; getBoundingRect(): { x: number; y: number; width: number; height: number }; transform?: number[] }[] } } };
            const charts = (globalThis as unknown as { uiCharts?: Record<string, { chart: Chart }> }).uiCharts ?? {};
            const entry = Object.entries(charts).find(([id]) => id.endsWith('chart-util'));
            if (!entry) return null;
            const chart = entry[1].chart;
            const axis = chart.getModel().getComponent('xAxis', 0).axis;
            const categories = axis.scale.getOrdinalMeta().categories;
            if (categories.length === 0) return null;
            const labels = axis.getViewLabels().map((l) => l.formattedLabel);
            // The drawn label texts with their boxes on the canvas (rotation included).
            const boxes = chart
              .getZr()
              .storage.getDisplayList()
              .filter((el) => (el.type === 'text' || el.type === 'tspan') && el.style?.text && categories.includes(el.style.text))
              .map((el) => {
                const r = el.getBoundingRect();
                const m = el.transform ?? [1, 0, 0, 1, 0, 0];
                // The box of the rotated rectangle (its four corners through the transform).
                const xs: number[] = [];
                const ys: number[] = [];
                for (const [x, y] of [[r.x, r.y], [r.x + r.width, r.y], [r.x, r.y + r.height], [r.x + r.width, r.y + r.height]]) {
                  xs.push(m[0] * x + m[2] * y + m[4]);
                  ys.push(m[1] * x + m[3] * y + m[5]);
                }
                return { x: Math.min(...xs), y: Math.min(...ys), width: Math.max(...xs) - Math.min(...xs), height: Math.max(...ys) - Math.min(...ys), text: el.style!.text! };
              });
            return { categories, labels, boxes };
          })
          .then((v) => (v && v.categories.length === PRINTERS ? v : null)),
      'the utilisation chart with 60 printers',
      45_000,
    );
    await page.screenshot({ path: path.join(ARTIFACTS, `utilisation-${PRINTERS}-printers.png`), fullPage: true });
    await page.locator('.nrdb-ui-group', { hasText: 'Utilisation per printer' }).screenshot({ path: path.join(ARTIFACTS, `utilisation-${PRINTERS}-printers-chart.png`) });
    const expected = Array.from({ length: PRINTERS }, (_, i) => nameOf(i)).sort();
    expect([...view.categories].sort()).toEqual(expected);
    // Every category has its label, not every other one.
    expect([...view.labels].sort()).toEqual(expected);
    const drawn: AxisView = { labels: view.boxes.map((b) => b.text), boxes: view.boxes };
    expect([...drawn.labels].sort()).toEqual(expected);
    // Names slanted at 45° run side by side from their bars (the right end of each box): lines of 11 px text
    // need the next one 11 px on, i.e. 11 / sin 45° along the axis.
    const byX = [...drawn.boxes].sort((a, b) => a.x + a.width - (b.x + b.width));
    for (let i = 1; i < byX.length; i++) expect((byX[i].x + byX[i].width - (byX[i - 1].x + byX[i - 1].width)) * Math.SQRT1_2).toBeGreaterThanOrEqual(11);
    // No name is cut at the chart's left edge.
    expect(Math.min(...byX.map((b) => b.x))).toBeGreaterThanOrEqual(0);
    await page.close();
  }, 90_000);
});
