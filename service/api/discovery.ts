import type { ServiceContext } from '../context';
import { defineRoute, type AnyRoute } from '../http/route';
import { DiscoveryList, DiscoveryScanBody, DiscoveryScanResult } from '../schemas/discovery';

export function discoveryRoutes({ discovery }: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/discovery',
      tag: 'Printers',
      summary: 'Printers found on the LAN',
      description:
        'Bambu Lab printers heard announcing themselves (SSDP on UDP `discovery_ssdp_port`) and PrusaLink printers found by POST /discovery/scan, seen within `discovery_ttl_s`. `added` says whether the farm has them; add one with POST /printers `{discovered, access_code}`.',
      response: DiscoveryList,
      async handler() {
        return { printers: await discovery.list(), ssdp_port: discovery.ssdpPort };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/discovery/scan',
      tag: 'Printers',
      summary: 'Look for printers now',
      description:
        'Sends an SSDP M-SEARCH to the Bambu Lab printers and probes the `targets` for PrusaLink (`GET /api/version`; a 401 with a Digest challenge counts as found), at most 32 requests at once, 1 s each, at most 1024 addresses. Only private, link-local and loopback addresses (422 otherwise); 409 SCAN_RUNNING while another scan runs. Answers when the scan has ended; `discovery_update` events on /ws say what was found as it is found.',
      body: DiscoveryScanBody,
      response: DiscoveryScanResult,
      errors: [409],
      async handler({ body }) {
        const result = await discovery.scan(body.targets);
        return { ...result, printers: await discovery.list(), ssdp_port: discovery.ssdpPort };
      },
    }),
  ];
}
