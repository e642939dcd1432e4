/** Printer discovery: the printers found on the LAN, scans, and adding a discovered printer. */
import { z } from 'zod';
import { timestamp } from './common';

export const DiscoveredPrinter = z
  .object({
    type: z.enum(['bambu_lab', 'prusa_core']),
    model: z.string().nullable().meta({ description: 'Bambu: from the announced model code (BL-P001 -> X1C ...; an unknown code as it is). PrusaLink: from /api/version' }),
    name: z.string().nullable().meta({ description: 'The name the printer gives itself' }),
    serial_number: z.string().nullable(),
    ip_address: z.string(),
    port: z.number().int().nullable().meta({ description: 'PrusaLink: the HTTP port when it is not 80' }),
    source: z.enum(['ssdp', 'probe']),
    first_seen: timestamp,
    last_seen: timestamp,
    added: z.boolean().meta({ description: 'A printer of the farm is this one' }),
    printer_id: z.string().nullable(),
    auth_required: z.boolean().meta({ description: 'PrusaLink answered 401 with a Digest challenge: its password is needed' }),
  })
;

export const DiscoveryList = z.object({
  printers: z.array(DiscoveredPrinter).meta({ description: 'Seen within discovery_ttl_s, the most recently seen first (at most 1024)' }),
  ssdp_port: z.number().int().nullable().meta({ description: 'UDP port where Bambu announcements are heard (null: off)' }),
});

export const DiscoveryScanBody = z.strictObject({
  targets: z
    .array(z.string().trim().min(1).max(64))
    .max(64)
    .default([])
    .meta({ description: 'Addresses to probe for PrusaLink: "192.168.1.0/24", "10.0.0.7", "127.0.0.1:8080", "[fe80::1]:80"; private, link-local and loopback only (422 otherwise), at most 1024 addresses' }),
});

export const DiscoveryScanResult = DiscoveryList.extend({
  probed: z.number().int().meta({ description: 'Addresses probed' }),
  found: z.number().int().meta({ description: 'PrusaLink printers that answered' }),
  ssdp_search: z.boolean().meta({ description: 'An M-SEARCH went out to the Bambu printers' }),
});

export const CreateFromDiscoveryBody = z
  .strictObject({
    discovered: z.string().trim().min(1).max(64).meta({ description: 'Serial number or IP address (ip:port for PrusaLink on another port) of a printer in GET /api/v1/discovery' }),
    access_code: z.string().min(1).max(256).meta({ description: 'Bambu LAN access code, or the PrusaLink password' }),
    name: z.string().trim().min(1).max(100).optional().meta({ description: 'Default: the name the printer gives itself' }),
  })
;
