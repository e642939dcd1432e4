import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../connection';
import { flavourOf, readSnapshot } from '../dialect';
import type { IdeasTable, TrendingItemsTable } from '../schema';

export interface IdeaFileInfo {
  file_count: number | null;
  formats: string[];
  files: { name: string; format: string | null; size: string | null }[];
}

/** An idea as the domain sees it: booleans, arrays and objects instead of SQLite's integers and text. */
export interface IdeaRecord extends Omit<Selectable<IdeasTable>, 'is_business' | 'tags' | 'file_info' | 'metadata_refresh_needed'> {
  is_business: boolean;
  tags: string[];
  file_info: IdeaFileInfo | null;
  metadata_refresh_needed: boolean;
}

export type NewIdea = Omit<IdeaRecord, 'id'>;
export type IdeaPatch = Partial<Omit<IdeaRecord, 'id' | 'created_at' | 'source_platform' | 'model_id'>>;

export interface IdeaQuery {
  status?: string;
  source_platform?: string;
  /** Ideas that carry every one of these tags (compared without case). */
  tags?: string[];
  is_business?: boolean;
  /** Text in the title, creator, description or notes. */
  search?: string;
  page: number;
  limit: number;
  order_by: 'created_at' | 'updated_at' | 'title' | 'status_changed_at';
  order_dir: 'asc' | 'desc';
}

function toRow(values: IdeaPatch | NewIdea): Updateable<IdeasTable> {
  const row: Record<string, unknown> = { ...values };
  if ('tags' in values && values.tags !== undefined) row.tags = JSON.stringify(values.tags);
  if ('file_info' in values && values.file_info !== undefined) row.file_info = values.file_info === null ? null : JSON.stringify(values.file_info);
  if (values.is_business !== undefined) row.is_business = values.is_business ? 1 : 0;
  if (values.metadata_refresh_needed !== undefined) row.metadata_refresh_needed = values.metadata_refresh_needed ? 1 : 0;
  return row as Updateable<IdeasTable>;
}

function toRecord(row: Selectable<IdeasTable>): IdeaRecord {
  return {
    ...row,
    is_business: row.is_business === 1,
    metadata_refresh_needed: row.metadata_refresh_needed === 1,
    tags: JSON.parse(row.tags) as string[],
    file_info: row.file_info == null ? null : (JSON.parse(row.file_info) as IdeaFileInfo),
  };
}

/** `%` and `_` are matched as themselves. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export class IdeasRepository {
  constructor(private readonly db: Db) {}

  async get(id: number): Promise<IdeaRecord | undefined> {
    const row = await this.db.selectFrom('ideas').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async findByModel(platform: string, modelId: string): Promise<IdeaRecord | undefined> {
    const row = await this.db.selectFrom('ideas').selectAll().where('source_platform', '=', platform).where('model_id', '=', modelId).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Inserts an idea; a second idea for the same (platform, model id) fails with a unique violation. */
  async insert(idea: NewIdea): Promise<number> {
    const result = await this.db
      .insertInto('ideas')
      .values(toRow(idea) as Insertable<IdeasTable>)
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(result.id);
  }

  async update(id: number, patch: IdeaPatch): Promise<boolean> {
    const result = await this.db.updateTable('ideas').set(toRow(patch)).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Changes an idea only while its status is still `from` (a compare-and-set: two moves can't both win). */
  async transition(id: number, from: string, patch: IdeaPatch): Promise<boolean> {
    const result = await this.db.updateTable('ideas').set(toRow(patch)).where('id', '=', id).where('status', '=', from).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async delete(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('ideas').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async list(q: IdeaQuery): Promise<{ ideas: IdeaRecord[]; total: number }> {
    const flavour = flavourOf(this.db);
    let base = this.db.selectFrom('ideas');
    if (q.status !== undefined) base = base.where('status', '=', q.status);
    if (q.source_platform !== undefined) base = base.where('source_platform', '=', q.source_platform);
    if (q.is_business !== undefined) base = base.where('is_business', '=', q.is_business ? 1 : 0);
    for (const tag of q.tags ?? []) {
      base = base.where(flavour.jsonArrayHasCi(sql.ref('ideas.tags'), tag));
    }
    if (q.search !== undefined) {
      const p = likePattern(q.search);
      base = base.where(
        sql<boolean>`(${sql.join(['title', 'creator_name', 'description', 'notes'].map((c) => flavour.likeCi(sql.ref(`ideas.${c}`), p)), sql` or `)})`,
      );
    }
    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const dir = q.order_dir === 'asc' ? sql`asc` : sql`desc`;
    const key = q.order_by === 'title' ? flavour.sortKeyCi(sql.ref('ideas.title')) : sql.ref(`ideas.${q.order_by}`);
    const rows = await base
      .selectAll()
      .orderBy(sql`${key} ${dir}`)
      .orderBy(sql`ideas.id ${dir}`)
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    return { ideas: rows.map(toRecord), total: Number(total) };
  }

  /** A page of the list with its total and the count per status, read on one snapshot (they agree). */
  listWithCounts(q: IdeaQuery) {
    return readSnapshot(this.db, async (trx) => {
      const repo = new IdeasRepository(trx);
      const page = await repo.list(q);
      return { ...page, byStatus: await repo.countByStatus() };
    });
  }

  /** Number of ideas per status, over all ideas. */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('ideas')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  /**
   * Printing ideas whose linked job has completed become completed (all of them, or those of these jobs: a
   * burst's completions in one statement). Returns the ids that moved.
   */
  async completeFollowingJobs(at: string, jobId?: number | readonly number[]): Promise<number[]> {
    let q = this.db
      .updateTable('ideas')
      .set({ status: 'completed', status_changed_at: at, updated_at: at })
      .where('status', '=', 'printing')
      .where('job_id', 'in', (eb) => eb.selectFrom('jobs').select('jobs.id').where('jobs.status', '=', 'completed'));
    if (typeof jobId === 'number') q = q.where('job_id', '=', jobId);
    else if (jobId !== undefined) q = jobId.length ? q.where('job_id', 'in', [...jobId]) : q.where(sql<boolean>`1 = 0`);
    const rows = await q.returning('id').execute();
    return rows.map((r) => r.id);
  }

  /** Imported ideas still waiting for their page's metadata, least recently tried first. */
  async needingMetadata(limit: number): Promise<IdeaRecord[]> {
    const rows = await this.db
      .selectFrom('ideas')
      .selectAll()
      .where('metadata_refresh_needed', '=', 1)
      .where('model_id', 'is not', null)
      .orderBy(sql`coalesce(metadata_attempted_at, '')`)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toRecord);
  }

  async count(): Promise<number> {
    const { n } = await this.db
      .selectFrom('ideas')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(n);
  }
}

export interface TrendingStats {
  likes?: number;
  downloads?: number;
  views?: number;
  [key: string]: number | undefined;
}

export interface TrendingItemRecord extends Omit<Selectable<TrendingItemsTable>, 'stats'> {
  stats: TrendingStats | null;
}

export type NewTrendingItem = Omit<TrendingItemRecord, 'id' | 'platform' | 'rank' | 'fetched_at'>;

export interface TrendingCacheRecord {
  platform: string;
  cached_at: string;
  expires_at: string;
}

function toTrending(row: Selectable<TrendingItemsTable> & { saved_idea_id?: number | null }): TrendingItemRecord & { saved_idea_id: number | null } {
  return { ...row, stats: row.stats == null ? null : (JSON.parse(row.stats) as TrendingStats), saved_idea_id: row.saved_idea_id ?? null };
}

/** The trending cache: the items of each platform and when they were fetched and expire. */
export class TrendingRepository {
  constructor(private readonly db: Db) {}

  private select() {
    return this.db
      .selectFrom('trending_items')
      .leftJoin('ideas', (join) => join.onRef('ideas.source_platform', '=', 'trending_items.platform').onRef('ideas.model_id', '=', 'trending_items.model_id'))
      .selectAll('trending_items')
      .select('ideas.id as saved_idea_id');
  }

  /** Replaces a platform's items (in the order given) and its cache times, in one transaction. */
  async replace(platform: string, items: NewTrendingItem[], cachedAt: string, expiresAt: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('trending_items').where('platform', '=', platform).execute();
      const seen = new Set<string>();
      let rank = 0;
      for (const item of items) {
        const id = `${platform}:${item.model_id}`;
        if (seen.has(id)) continue;
        seen.add(id);
        rank += 1;
        await trx
          .insertInto('trending_items')
          .values({ ...item, id, platform, rank, stats: item.stats == null ? null : JSON.stringify(item.stats), fetched_at: cachedAt })
          .execute();
      }
      await trx
        .insertInto('trending_cache')
        .values({ platform, cached_at: cachedAt, expires_at: expiresAt })
        .onConflict((oc) => oc.column('platform').doUpdateSet({ cached_at: cachedAt, expires_at: expiresAt }))
        .execute();
    });
  }

  /** Marks a platform's cache as filled now without touching its items (discovery inactive). */
  async touch(platform: string, cachedAt: string, expiresAt: string): Promise<void> {
    await this.db
      .insertInto('trending_cache')
      .values({ platform, cached_at: cachedAt, expires_at: expiresAt })
      .onConflict((oc) => oc.column('platform').doUpdateSet({ cached_at: cachedAt, expires_at: expiresAt }))
      .execute();
  }

  async items(platforms: readonly string[]) {
    if (platforms.length === 0) return [];
    const rows = await this.select().where('trending_items.platform', 'in', platforms).orderBy('trending_items.rank').orderBy('trending_items.platform').execute();
    return rows.map(toTrending);
  }

  async get(id: string) {
    const row = await this.select().where('trending_items.id', '=', id).executeTakeFirst();
    return row && toTrending(row);
  }

  async cacheState(platforms: readonly string[]): Promise<TrendingCacheRecord[]> {
    if (platforms.length === 0) return [];
    return this.db.selectFrom('trending_cache').selectAll().where('platform', 'in', platforms).execute();
  }
}
