/**
 * The API docs as a person sees them: headless Chromium (Debian's package)
 * opens /docs and /redoc; every request stays on this service, nothing fails,
 * the console stays clean and the operations are on the page.
 */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { startService, type Harness } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does)`);
const describeBrowser = haveChromium ? describe : describe.skip;
const RENDER_WAIT_MS = 60_000;

describeBrowser('API docs in a browser', () => {
  let h: Harness;
  let browser: Browser;
  beforeAll(async () => {
    h = await startService();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  async function open(pagePath: string, ready: string) {
    const page = await browser.newPage();
    const foreign: string[] = [];
    const failed: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      // data: and blob: URLs are made in the page itself (ReDoc's worker).
      if (!r.url().startsWith(h.base) && !/^(data|blob):/.test(r.url())) foreign.push(r.url());
    });
    page.on('requestfailed', (r) => failed.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(h.base + pagePath);
    // Rendering takes 2-4 s here, even with six CPU burners; a CI machine busy with the other jest worker once
    // took over 15 s for ReDoc. The wait is generous, and a page that never renders says what it saw.
    await page.waitForSelector(ready, { timeout: RENDER_WAIT_MS }).catch((err: Error) => {
      throw new Error(`${pagePath} did not show ${ready}: ${err.message}\n${JSON.stringify({ foreign, failed, errors })}`);
    });
    return { page, foreign, failed, errors };
  }

  test('Swagger UI at /docs shows every operation, loading nothing from elsewhere', async () => {
    const { page, foreign, failed, errors } = await open('/docs/', '.opblock');
    const operations = await page.locator('.opblock').count();
    expect(operations).toBeGreaterThanOrEqual(18);
    expect(await page.locator('.info .title').innerText()).toContain('Printfarm API');
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/docs.png`, fullPage: false });
    expect({ foreign, failed, errors }).toEqual({ foreign: [], failed: [], errors: [] });
    await page.close();
  }, 90_000);

  test('ReDoc at /redoc renders the document, loading nothing from elsewhere', async () => {
    const { page, foreign, failed, errors } = await open('/redoc', 'h1');
    expect(await page.locator('h1').first().innerText()).toContain('Printfarm API');
    await page.locator('h2', { hasText: 'List printers' }).waitFor();
    if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/redoc.png`, fullPage: false });
    expect({ foreign, failed, errors }).toEqual({ foreign: [], failed: [], errors: [] });
    await page.close();
  }, 90_000);

  test('with access control on, /docs has an Authorize button; with a token, Try it out works, POSTs included (own origin)', async () => {
    const token = 'admin-token-for-the-docs-0123';
    const locked = await startService({ env: { AUTH_TOKENS: `admin:${token}` } });
    const page = await browser.newPage();
    try {
      await page.goto(locked.base + '/docs/');
      await page.waitForSelector('.opblock', { timeout: RENDER_WAIT_MS });
      await page.locator('button.authorize').first().click();
      await page.locator('.auth-container input').first().fill(token);
      await page.locator('.auth-btn-wrapper button.authorize').first().click();
      await page.locator('.auth-btn-wrapper button.btn-done, button.close-modal').first().click();
      const run = async (opId: string) => {
        const op = page.locator(`#${opId}`);
        await op.locator('.opblock-summary').first().click();
        await op.locator('button.try-out__btn').click();
        await op.locator('button.execute').click();
        const status = op.locator('.live-responses-table .response .response-col_status').first();
        await status.waitFor({ timeout: 15_000 });
        return (await status.innerText()).trim();
      };
      expect(await run('operations-Printers-getPrinters')).toBe('200');
      // A POST from the docs page carries the service's own Origin: allowed by the browser guard.
      expect(await run('operations-Usage_statistics-postUsageStatsOptOut')).toBe('200');
      expect((await locked.request('GET', '/api/v1/printers')).status).toBe(401);
    } finally {
      await page.close();
      await locked.close();
    }
  }, 120_000);
});
