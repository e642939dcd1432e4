/**
 * The embedded service in Node-RED lets pages that Node-RED itself serves (a dashboard on Node-RED's
 * port of the same host) use the API from the browser, and still refuses other sites' pages.
 */
import { flow, helper, NODES, until } from '../helpers/node-red';

describe('printfarm-server (embedded) and browser origins', () => {
  afterEach(async () => {
    await helper.unload();
    helper.settings({});
  });

  test("a page on Node-RED's own port may change things; a page of another site may not", async () => {
    helper.settings({ uiPort: 18801 });
    await helper.load(NODES, flow([]));
    const server = helper.getNode('srv') as unknown as { connection: { client: { baseUrl: string } | null; state: string } };
    await until(() => server.connection.state === 'connected', 'the embedded service');
    const base = server.connection.client!.baseUrl;
    const optOut = (origin: string) => fetch(`${base}/api/v1/usage-stats/opt-out`, { method: 'POST', headers: { origin } });
    const dashboard = await optOut('http://127.0.0.1:18801');
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:18801');
    const foreign = await optOut('http://evil.example');
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('ORIGIN_NOT_ALLOWED');
    expect((await optOut('http://127.0.0.1:18802')).status).toBe(403);
  });
});
