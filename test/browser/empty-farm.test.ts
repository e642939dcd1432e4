/**
 * The dashboard of `npm start` before the first printer is added (no demo):
 * the farm page says there are no printers yet and where to add one, instead
 * of blaming a filter, and shows no success rate (nor its green check) for a
 * day without finished prints (the statistics page neither, for its range); the cameras page says no printers yet too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = path.join(__dirname, '..', '..');
const haveChromium = fs.existsSync(CHROMIUM);
const built = fs.existsSync(path.join(ROOT, 'dist', 'nodes', 'printfarm-server.js'));
if (!haveChromium) console.warn(`empty farm test skipped: no Chromium at ${CHROMIUM}`);
if (!built) console.warn('empty farm test skipped: run `npm run build` first (npm test does)');
const describeBrowser = haveChromium && built ? describe : describe.skip;

describeBrowser('the dashboard of a farm without printers', () => {
  let nodeRed: RunningNodeRed;
  let browser: Browser;
  const userDir = tempDir('printfarm-empty-');

  beforeAll(async () => {
    [nodeRed, browser] = await Promise.all([
      startNodeRed({ userDir }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] }),
    ]);
  }, 45_000);

  afterAll(async () => {
    await browser?.close();
    expect(await nodeRed?.stop()).toBe(0);
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  test('the farm page says no printers yet and points at Add printer, with no success rate (nor on the statistics page); the cameras page says no printers yet', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${nodeRed.url}/dashboard/farm`);
    const empty = page.locator('.pf-board .pf-empty').first();
    await empty.getByText('No printers in the farm yet').waitFor({ timeout: 30_000 });
    expect(await empty.innerText()).toContain('Add printer');
    expect(await empty.innerText()).not.toContain('filter');
    await page.locator('[data-action="add-printer"]').waitFor();
    // No print finished today: the success rate is a dash, its check mark not green.
    const rate = page.locator('[data-kpi="success-rate"]');
    expect(await rate.locator('.pf-kpi-value').innerText()).toBe('–');
    // Evaluated in the page (this file has no DOM types): the colour a green icon would have, and the icon's.
    const green = await page.evaluate(`(() => {
      const probe = document.createElement('span');
      probe.style.color = 'rgb(var(--pf-green))';
      document.querySelector('.pf-board').appendChild(probe);
      const c = getComputedStyle(probe).color;
      probe.remove();
      return c;
    })()`);
    const icon = await page.evaluate(`getComputedStyle(document.querySelector('[data-kpi="success-rate"] .v-icon')).color`);
    expect(icon).not.toBe(green);

    // The statistics page likewise: no finished print in the range, no rate (a green "0.0 %" read as all failed).
    await page.goto(`${nodeRed.url}/dashboard/statistics`);
    const range = page.locator('.pf-panel [data-kpi="success-rate"]');
    await page.locator('.pf-panel [data-kpi="jobs"] .pf-kpi-value').filter({ hasText: '0' }).waitFor({ timeout: 30_000 });
    expect(await range.locator('.pf-kpi-value').innerText()).toBe('–');
    expect(await page.evaluate(`getComputedStyle(document.querySelector('.pf-panel [data-kpi="success-rate"] .v-icon')).color`)).not.toBe(green);

    await page.goto(`${nodeRed.url}/dashboard/cameras`);
    await page.getByText('No printers yet.').waitFor({ timeout: 30_000 });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
