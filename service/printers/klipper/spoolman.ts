/**
 * The filament a Klipper printer has loaded, from Moonraker's Spoolman
 * integration: the active spool (`server.spoolman.get_spool_id`) and its
 * filament through the proxy (`GET /v1/spool/{id}`, version 2 answer). One
 * extruder, so one material in slot 0; no active spool is "nothing loaded".
 */
import type { PrinterMaterial } from '../driver';
import type { RpcLink } from './rpc';

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The active spool as a material ([] when none is set), or null when Spoolman cannot be asked. */
export async function activeSpool(link: RpcLink, spoolId?: unknown): Promise<PrinterMaterial[] | null> {
  let id = spoolId;
  if (id === undefined) {
    const answer = await link.call<{ spool_id?: unknown }>('server.spoolman.get_spool_id').catch(() => null);
    if (!answer) return null;
    id = answer.spool_id;
  }
  if (id === null) return [];
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return null;
  const proxied = await link.call<{ response?: Record<string, unknown> | null; error?: unknown }>('server.spoolman.proxy', { use_v2_response: true, request_method: 'GET', path: `/v1/spool/${id}` }).catch(() => null);
  const spool = proxied?.response;
  if (!spool || typeof spool !== 'object') return null;
  const filament = (spool.filament && typeof spool.filament === 'object' ? spool.filament : {}) as Record<string, unknown>;
  const type = typeof filament.material === 'string' ? filament.material.trim().slice(0, 50) : '';
  if (!type) return [];
  const hex = typeof filament.color_hex === 'string' && /^[0-9a-f]{6}$/i.test(filament.color_hex) ? `#${filament.color_hex.toUpperCase()}` : null;
  const remaining = num(spool.remaining_weight);
  const total = num(filament.weight) ?? num(spool.initial_weight);
  const percent = remaining !== null && total && total > 0 ? Math.max(0, Math.min(100, Math.round((remaining / total) * 100))) : null;
  return [{ slot: 0, type, color: hex, remaining_percent: percent }];
}
