import type { Db } from '../connection';

/** Key/value settings; values are stored as JSON so that types survive a restart. */
export class SettingsRepository {
  constructor(private readonly db: Db) {}

  async all(): Promise<Record<string, unknown>> {
    const rows = await this.db.selectFrom('settings').select(['key', 'value']).execute();
    return Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
  }

  /** Writes all values in one transaction: either every setting changes or none. */
  async setMany(values: Record<string, unknown>, at: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const [key, value] of Object.entries(values)) {
        await trx
          .insertInto('settings')
          .values({ key, value: JSON.stringify(value), updated_at: at })
          .onConflict((oc) => oc.column('key').doUpdateSet({ value: JSON.stringify(value), updated_at: at }))
          .execute();
      }
    });
  }
}
