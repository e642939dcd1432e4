/**
 * The dashboard's camera pictures as `npm run demo` shows them (Node-RED with
 * the farm and dashboard flows, the embedded service, the simulated demo farm
 * whose cameras speak their real protocols), in headless Chromium: the
 * Cameras page has a tile per printer and a live picture in each tile whose
 * printer has a camera, on a 1920 px wall screen (several a row) and on a
 * phone (one a row); a farm card shows its camera's snapshot and a click on
 * it opens the live stream. The pictures come through Node-RED's camera
 * routes (a bad address answers 400, an unknown printer 502). A deploy that
 * replaces the relaying printer node cuts the wall's streams, and the wall
 * opens them again.
 *
 * Screenshots go to test/artifacts/ (git-ignored) for a person to look at.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { until } from '../helpers/farm';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = path.join(__dirname, '..', '..');
const haveChromium = fs.existsSync(CHROMIUM);
const built = fs.existsSync(path.join(ROOT, 'dist', 'nodes', 'printfarm-server.js'));
if (!haveChromium) console.warn(`camera dashboard test skipped: no Chromium at ${CHROMIUM}`);
if (!built) console.warn('camera dashboard test skipped: run `npm run build` first (npm test does)');
const describeBrowser = haveChromium && built ? describe : describe.skip;

const ARTIFACTS = path.join(ROOT, 'test', 'artifacts');
const loaded = (img: Locator) => img.evaluate((e) => (e as unknown as { complete: boolean; naturalWidth: number }).complete && (e as unknown as { naturalWidth: number }).naturalWidth > 0).catch(() => false);

describeBrowser('camera pictures on the dashboard of npm run demo', () => {
  let nodeRed: RunningNodeRed;
  let browser: Browser;
  let api: string;
  const userDir = tempDir('printfarm-cameras-');
  type Printer = { id: string; name: string; camera: { available: boolean; source: string | null } | null };
  /**
   * The demo printers whose camera the simulators always serve: Bambu A1 / P1S (port 6000) and
   * PrusaLink. (The X1C's RTSPS camera needs ffmpeg; its tile shows a stream or says why not.)
   */
  let withCamera: Printer[] = [];
  let all: Printer[] = [];

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    [nodeRed, browser] = await Promise.all([
      startNodeRed({ userDir, demo: true }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] }),
    ]);
    api = (await until(() => /Printfarm API\s+(http\S+)/.exec(nodeRed.output())?.[1], 'the service address', 20_000)).replace(/\/$/, '');
    // The demo farm's Bambu A1 / P1S (port 6000) and PrusaLink cameras at least: 3 or more.
    await until(
      async () => {
        all = ((await (await fetch(`${api}/printers`)).json()) as { printers: Printer[] }).printers;
        withCamera = all.filter((p) => p.camera?.available && (p.camera.source === 'bambu_tls' || p.camera.source === 'prusalink'));
        return withCamera.length >= 3;
      },
      'three demo printers with a camera',
      30_000,
    );
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    expect(await nodeRed?.stop()).toBe(0);
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  const watchErrors = (page: Page) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    return errors;
  };

  test('Cameras page: a tile per printer, a live picture in each camera\'s tile; wall screen and phone layouts', async () => {
    const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
    const errors = watchErrors(page);
    await page.goto(`${nodeRed.url}/dashboard/cameras`);
    await until(async () => (await page.locator('.pf-tile').count()) === all.length, `${all.length} tiles`, 20_000);
    for (const p of withCamera) {
      const img = page.locator(`.pf-tile[data-printer="${p.id}"] img[data-role="camera-stream"]`);
      await until(() => loaded(img), `the live picture of ${p.id}`, 30_000);
    }
    // Every other tile (the X1C's RTSPS camera starts ffmpeg, slow on a loaded machine) has its name
    // and a stream or a reason why there is none.
    for (const p of all.filter((x) => !withCamera.includes(x))) {
      const tile = page.locator(`.pf-tile[data-printer="${p.id}"]`);
      expect(await tile.locator('.pf-tile-name').innerText()).toBe(p.name);
      await until(async () => (await tile.locator('img[data-role="camera-stream"]').count()) === 1 || (await tile.locator('.pf-tile-none').innerText().catch(() => '')).length > 0, `a stream or a reason on ${p.id}'s tile`, 10_000);
    }
    // Name and state over each tile.
    const first = page.locator(`.pf-tile[data-printer="${withCamera[0].id}"]`);
    expect(await first.locator('.pf-tile-name').innerText()).toBe(withCamera[0].name);
    expect(await first.locator('[data-role="status"]').innerText()).not.toBe('');
    // The stream is live: the picture changes (the simulators draw progress and a clock into each frame).
    const img = first.locator('img[data-role="camera-stream"]');
    const frame = () => img.screenshot().then((b) => b.toString('base64'));
    const before = await frame();
    await until(async () => (await frame()) !== before, 'a new frame in the tile', 20_000);
    // Wall screen: several tiles a row.
    const rows = async () => page.locator('.pf-tile').evaluateAll((els) => new Set(els.map((e) => Math.round(e.getBoundingClientRect().top))).size);
    expect(await rows()).toBeLessThan(all.length);
    // For the picture a person looks at: every stream given a while to show (not asserted: see above).
    await until(async () => (await Promise.all((await page.locator('img[data-role="camera-stream"]').all()).map(loaded))).every(Boolean), 'every stream showing', 20_000).catch(() => undefined);
    await page.waitForTimeout(1500); // the next frame drawn in every tile before the picture is taken
    await page.screenshot({ path: path.join(ARTIFACTS, 'cameras-1920.png'), fullPage: true });

    // Phone: one tile a row, none wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await until(async () => {
      const boxes = await page.locator('.pf-tile').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => [Math.round(r.left), Math.round(r.right)]));
      return boxes.every(([l, r]) => l === boxes[0][0] && r <= 390);
    }, 'tiles stacked at 390 px', 5_000);
    await page.screenshot({ path: path.join(ARTIFACTS, 'cameras-390.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  test('a deploy cuts the wall\'s streams (the old printer node ends its relays); the wall opens them again through the new node', async () => {
    const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
    const errors = watchErrors(page);
    await page.goto(`${nodeRed.url}/dashboard/cameras`);
    const stream = (p: Printer) => page.locator(`.pf-tile[data-printer="${p.id}"] img[data-role="camera-stream"]`);
    for (const p of withCamera) await until(() => loaded(stream(p)), `the live picture of ${p.id}`, 30_000);
    for (const p of withCamera) await stream(p).evaluate((e) => e.setAttribute('data-before-deploy', ''));

    // The editor's "Modified Nodes" deploy of a change to the printer node that relays the pictures: that
    // node is new, the dashboard's own nodes stay (so the page keeps its pictures, which do not reload).
    const headers = { 'content-type': 'application/json', 'node-red-api-version': 'v2' };
    const current = (await (await fetch(`${nodeRed.url}/flows`, { headers })).json()) as { rev: string; flows: { id: string; name?: string }[] };
    const flows = current.flows.map((n) => (n.id.endsWith('camera-relay') ? { ...n, name: 'cameras (renamed)' } : n));
    expect(flows.filter((n) => n.name === 'cameras (renamed)')).toHaveLength(1);
    const deployed = await fetch(`${nodeRed.url}/flows`, { method: 'POST', headers: { ...headers, 'node-red-deployment-type': 'nodes' }, body: JSON.stringify({ rev: current.rev, flows }) });
    expect(deployed.status).toBe(200);

    // Chromium fires no event for a cut stream; the wall finds the broken picture and asks again (10 s later).
    for (const p of withCamera) {
      const fresh = page.locator(`.pf-tile[data-printer="${p.id}"] img[data-role="camera-stream"]:not([data-before-deploy])`);
      await until(() => loaded(fresh), `a new live picture of ${p.id} after the deploy`, 40_000);
    }
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  test('farm page: a card shows its camera\'s snapshot; a click opens the live stream', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors = watchErrors(page);
    await page.goto(`${nodeRed.url}/dashboard/farm`);
    const p = withCamera[0];
    const cam = page.locator(`.pf-card[data-printer="${p.id}"] [data-role="camera"]`);
    await cam.waitFor({ timeout: 20_000 });
    await until(() => loaded(cam.locator('img')), `the snapshot on ${p.id}'s card`, 30_000);
    // Only the cards on screen ask for pictures: their <img> says which.
    expect(await cam.locator('img').getAttribute('src')).toMatch(new RegExp(`/printfarm-dashboard/camera/${p.id}/snapshot\\?t=\\d+$`));
    await cam.click();
    const live = page.locator('[data-role="live-camera"] img');
    await until(() => loaded(live), 'the live stream in the dialog', 30_000);
    expect(await live.getAttribute('src')).toMatch(new RegExp(`/printfarm-dashboard/camera/${p.id}/stream$`));
    await page.screenshot({ path: path.join(ARTIFACTS, 'farm-camera-live.png') });
    await page.keyboard.press('Escape');

    // The camera routes themselves: a JPEG, a stream, 400 for a bad address, 502 for an unknown printer.
    const snap = await fetch(`${nodeRed.url}/printfarm-dashboard/camera/${p.id}/snapshot`);
    expect(snap.status).toBe(200);
    expect(snap.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await snap.arrayBuffer()).subarray(0, 2).toString('hex')).toBe('ffd8');
    const abort = new AbortController();
    const stream = await fetch(`${nodeRed.url}/printfarm-dashboard/camera/${p.id}/stream`, { signal: abort.signal });
    expect(stream.headers.get('content-type')).toMatch(/^multipart\/x-mixed-replace/);
    abort.abort();
    expect((await fetch(`${nodeRed.url}/printfarm-dashboard/camera/${p.id}/picture`)).status).toBe(400);
    const unknown = await fetch(`${nodeRed.url}/printfarm-dashboard/camera/no-such-printer/snapshot`);
    expect(unknown.status).toBe(502);
    expect(await unknown.text()).toMatch(/no-such-printer/);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
