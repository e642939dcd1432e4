/** Filament used in a period, per material and per spool (from the usage of ended prints). */
import type { Store } from '../db';
import type { SettingsService } from '../settings';
import type { StatisticsFilter } from '../schemas/statistics';
import { resolvePeriod } from '../statistics/period';
import type { SpoolService } from './spools';
import { round2 } from '../util/round';


export async function filamentStatistics(store: Store, spools: SpoolService, settings: SettingsService, q: StatisticsFilter) {
  const p = resolvePeriod(q, settings.get('timezone'));
  const [bySpool, byMaterial] = await Promise.all([store.filamentUsage.totals('spool', p.from, p.to), store.filamentUsage.totals('material', p.from, p.to)]);
  const perSpool = [];
  for (const t of bySpool) {
    const [source, idText] = t.key.split(':');
    const id = Number(idText);
    const local = source === 'local' ? await store.spools.get(id) : undefined;
    const remote = source === 'spoolman' ? spools.spoolman.get(id) : undefined;
    perSpool.push({
      spool_id: id,
      source: source === 'spoolman' ? ('spoolman' as const) : ('local' as const),
      material: local?.material ?? remote?.filament.material ?? null,
      color: local?.color ?? (remote?.filament.color_hex ? `#${remote.filament.color_hex.slice(0, 6).toUpperCase()}` : null),
      name: local?.name ?? remote?.filament.name ?? null,
      remaining_weight_g: local ? round2(local.remaining_weight_g) : (remote?.remaining_weight ?? null),
      grams: round2(t.grams),
      cost: round2(t.cost),
      jobs: t.jobs,
    });
  }
  return {
    period: { name: p.period, start_date: p.start_date, end_date: p.end_date },
    total_grams: round2(byMaterial.reduce((s, m) => s + m.grams, 0)),
    total_cost: round2(byMaterial.reduce((s, m) => s + m.cost, 0)),
    per_material: byMaterial.map((m) => ({ material: m.key, grams: round2(m.grams), cost: round2(m.cost), jobs: m.jobs })),
    per_spool: perSpool,
  };
}
