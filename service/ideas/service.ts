/**
 * Ideas / bookmarks: create, list, get, update, delete; import from a model
 * page URL of the five platforms; the life cycle idea -> planned -> printing
 * -> completed (plus archived); an idea that is printing follows its job to
 * completed. The page is fetched outside any transaction, through the guarded
 * PageFetcher (platform hosts only, timeout, size cap); without network the
 * idea is stored with what the URL gives and marked for a metadata refresh.
 */
import type { Logger } from 'pino';
import { DomainError, conflict, notFound } from '../errors';
import type { Store } from '../db';
import { isUniqueViolation } from '../db/connection';
import type { IdeaPatch, IdeaRecord, NewIdea } from '../db/repositories/ideas';
import type { EventBus } from '../events';
import type {
  CreateIdeaInput,
  IdeaListFilter,
  IdeaView,
  ImportIdeaInput,
  StatusChangeInput,
  UpdateIdeaInput,
} from '../schemas/ideas';
import { nowIso } from '../util/time';
import { PageFetcher, type PageFetcherOptions } from './fetcher';
import { canMove, IDEA_STATUSES, IDEA_TRANSITIONS, type IdeaStatus } from './lifecycle';
import { IdeaPages } from './pages';
import { recogniseModelUrl } from './platforms';
import { TrendingService, type TrendingOptions } from './trending';
import { ideaView, normaliseFileInfo } from './view';
import { paginationOf } from '../util/pagination';
import { WorkQueue } from '../util/work-queue';

export { ideaView } from './view';

/**
 * Job completions waiting to move their ideas along (two tasks at a time). Beyond, a completion is not
 * queued: once the backlog drains one statement moves every printing idea whose job completed.
 */
const JOB_BACKLOG = 20_000;
/** Completions one statement follows at most (a task takes the waiting ones along: a burst's in a few statements). */
const FOLLOW_BATCH = 500;

export interface IdeaServiceOptions extends PageFetcherOptions {
  /** How often ideas still missing their metadata are retried in the background (default 30 min; 0 turns it off). */
  metadataRetryMs?: number;
  /** Ideas retried per background round (default 5). */
  metadataRetryBatch?: number;
  trending?: TrendingOptions;
  /** Job completions waiting at most to be followed (default JOB_BACKLOG; tests make it small). */
  jobBacklog?: number;
}

/** 201 for a new idea, 200 for the one that already existed. */
export interface Saved {
  created: boolean;
  idea: IdeaView;
}

function bodyError(field: string, message: string, code = 'invalid_value'): DomainError {
  return new DomainError(422, 'VALIDATION_ERROR', `Invalid body: ${field}: ${message}`, { location: 'body', fields: [{ field, message, code }] });
}

export class IdeaService {
  readonly fetcher: PageFetcher;
  readonly trending: TrendingService;
  private readonly pages: IdeaPages;
  private readonly retryMs: number;
  private readonly retryBatch: number;
  private readonly controller = new AbortController();
  private readonly pending = new Set<Promise<unknown>>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** Job completions to follow, a few at a time (a burst of them must not fill the database's queue at once). */
  readonly jobWork: WorkQueue;
  /** Completions queued and not followed yet, oldest first: the first task to run follows them together. */
  private readonly due = new Set<number>();
  private unsubscribe: (() => void) | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly log: Logger,
    options: IdeaServiceOptions = {},
  ) {
    this.fetcher = new PageFetcher(options);
    this.trending = new TrendingService(store, log, options.trending);
    this.pages = new IdeaPages(store, log, this.fetcher, this.controller.signal);
    this.retryMs = options.metadataRetryMs ?? 30 * 60 * 1000;
    this.retryBatch = options.metadataRetryBatch ?? 5;
    this.jobWork = new WorkQueue({
      name: 'ideas following jobs',
      concurrency: 2,
      maxBacklog: options.jobBacklog ?? JOB_BACKLOG,
      log,
      catchUp: () => this.followJob(),
      whenFull: 'ideas of the completions refused are completed together once it drains',
    });
  }

  /** Follows job completions, starts the trending cache timer and the metadata retry. */
  start(): void {
    if (this.closed) return;
    this.unsubscribe = this.bus.on('job_update', (event) => {
      // The usage recorded after a job's end is announced with the job's status, completed again: the end itself
      // was heard first (or, refused by a full backlog, is caught up), so that announcement moves nothing.
      if (event.status !== 'completed' || (event.change === 'updated' && Array.isArray(event.filament_usage))) return;
      // Heard again before it was followed: followed once. Due before the push: a task started at once finds it.
      const due = !this.due.has(event.job_id);
      this.due.add(event.job_id);
      if (!this.jobWork.push(() => this.followDue(event.job_id), { once: `job:${event.job_id}` }) && due) this.due.delete(event.job_id);
    });
    this.trending.start();
    if (this.retryMs > 0) {
      this.retryTimer = setInterval(() => this.track(this.retryMetadata()), this.retryMs);
      this.retryTimer.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = null;
    this.controller.abort(new Error('service stopping'));
    await this.trending.close();
    // What waits is dropped: an idea whose job completed is completed on the next read anyway (syncWithJobs).
    await this.jobWork.close();
    this.due.clear();
    await Promise.allSettled([...this.pending]);
  }

  private track(work: Promise<unknown>): void {
    const p = work.catch((err) => this.log.warn({ err }, 'ideas: background work failed')).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  // ---- reading -------------------------------------------------------------

  async list(q: IdeaListFilter) {
    await this.syncWithJobs();
    const { ideas, total, byStatus } = await this.store.ideas.listWithCounts({
      status: q.status,
      source_platform: q.source_platform,
      tags: q.tags,
      is_business: q.is_business,
      search: q.search,
      page: q.page,
      limit: q.limit,
      order_by: q.order_by,
      order_dir: q.order_dir,
    });
    const counts = Object.fromEntries(IDEA_STATUSES.map((s) => [s, byStatus[s] ?? 0])) as Record<IdeaStatus, number>;
    return {
      ideas: ideas.map(ideaView),
      pagination: paginationOf(q, total),
      summary: { total_ideas: Object.values(counts).reduce((a, b) => a + b, 0), by_status: counts },
    };
  }

  async detail(id: number): Promise<IdeaView> {
    await this.syncWithJobs();
    return ideaView(await this.require(id));
  }

  // ---- writing -------------------------------------------------------------

  /** An idea made by hand (optionally pointing at a platform page, which is not fetched). */
  async create(input: CreateIdeaInput): Promise<IdeaView> {
    const recognised = input.source_url !== undefined ? recogniseModelUrl(input.source_url) : null;
    const model = recognised?.ok ? recognised.model : null;
    const now = nowIso();
    const idea: NewIdea = {
      title: input.title,
      creator_name: input.creator_name ?? null,
      source_platform: model?.platform ?? input.source_platform ?? 'manual',
      source_url: model?.canonical_url ?? input.source_url ?? null,
      model_id: model?.model_id ?? null,
      thumbnail_url: input.thumbnail_url ?? null,
      description: input.description ?? null,
      file_info: input.file_info ? normaliseFileInfo(input.file_info) : null,
      notes: input.notes ?? null,
      tags: input.tags,
      is_business: input.is_business,
      status: 'idea',
      job_id: null,
      metadata_refresh_needed: false,
      metadata_fetched_at: null,
      metadata_attempted_at: null,
      status_changed_at: now,
      created_at: now,
      updated_at: now,
    };
    try {
      return ideaView(await this.require(await this.store.ideas.insert(idea)));
    } catch (err) {
      if (model && isUniqueViolation(err)) {
        const existing = await this.store.ideas.findByModel(model.platform, model.model_id);
        throw conflict('IDEA_ALREADY_EXISTS', `This ${model.platform} model is already kept as idea ${existing?.id}`, {
          idea_id: existing?.id ?? null,
          source_platform: model.platform,
          model_id: model.model_id,
        });
      }
      throw err;
    }
  }

  /**
   * Imports a model page: 201 and the new idea, or 200 and the idea that already keeps this model
   * (unchanged; its metadata can be refreshed with refresh-metadata).
   */
  async import(input: ImportIdeaInput): Promise<Saved> {
    const r = recogniseModelUrl(input.url);
    if (!r.ok) throw bodyError('url', r.reason);
    const model = r.model;
    const existing = await this.store.ideas.findByModel(model.platform, model.model_id);
    if (existing) return { created: false, idea: ideaView(existing) };

    const meta = await this.pages.read(model);
    const now = nowIso();
    const idea: NewIdea = {
      title: meta?.title ?? model.title_hint,
      creator_name: meta?.creator_name ?? null,
      source_platform: model.platform,
      source_url: model.canonical_url,
      model_id: model.model_id,
      thumbnail_url: meta?.thumbnail_url ?? null,
      description: meta?.description ?? null,
      file_info: meta?.file_info ?? null,
      notes: input.notes ?? null,
      tags: input.tags,
      is_business: input.is_business,
      status: 'idea',
      job_id: null,
      metadata_refresh_needed: meta === null,
      metadata_fetched_at: meta === null ? null : now,
      metadata_attempted_at: now,
      status_changed_at: now,
      created_at: now,
      updated_at: now,
    };
    return this.insertOnce(idea, model.platform, model.model_id);
  }

  /** Saves a cached trending item as a personal idea (201), or answers the idea that already keeps it (200). */
  async saveTrending(trendingId: string): Promise<Saved> {
    const item = await this.trending.item(trendingId);
    const existing = await this.store.ideas.findByModel(item.platform, item.model_id);
    if (existing) return { created: false, idea: ideaView(existing) };
    const now = nowIso();
    return this.insertOnce(
      {
        title: item.title,
        creator_name: item.creator_name,
        source_platform: item.platform,
        source_url: item.source_url,
        model_id: item.model_id,
        thumbnail_url: item.thumbnail_url,
        description: item.description,
        file_info: null,
        notes: null,
        tags: [],
        is_business: false,
        status: 'idea',
        job_id: null,
        // The list gave title and picture; the page itself has not been read.
        metadata_refresh_needed: true,
        metadata_fetched_at: null,
        metadata_attempted_at: null,
        status_changed_at: now,
        created_at: now,
        updated_at: now,
      },
      item.platform,
      item.model_id,
    );
  }

  /** Inserts, or (when a concurrent request stored the same model first) answers that idea. */
  private async insertOnce(idea: NewIdea, platform: string, modelId: string): Promise<Saved> {
    try {
      const id = await this.store.ideas.insert(idea);
      return { created: true, idea: ideaView(await this.require(id)) };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const existing = await this.store.ideas.findByModel(platform, modelId);
      if (!existing) throw err;
      return { created: false, idea: ideaView(existing) };
    }
  }

  async update(id: number, input: UpdateIdeaInput): Promise<IdeaView> {
    await this.require(id);
    const patch: IdeaPatch = { updated_at: nowIso() };
    if (input.title !== undefined) patch.title = input.title;
    if (input.creator_name !== undefined) patch.creator_name = input.creator_name;
    if (input.thumbnail_url !== undefined) patch.thumbnail_url = input.thumbnail_url;
    if (input.description !== undefined) patch.description = input.description;
    if (input.file_info !== undefined) patch.file_info = input.file_info === null ? null : normaliseFileInfo(input.file_info);
    if (input.notes !== undefined) patch.notes = input.notes;
    if (input.tags !== undefined) patch.tags = input.tags;
    if (input.is_business !== undefined) patch.is_business = input.is_business;
    await this.store.ideas.update(id, patch);
    return ideaView(await this.require(id));
  }

  async remove(id: number) {
    await this.require(id);
    await this.store.ideas.delete(id);
    return { id, message: 'Idea deleted', deleted_at: nowIso() };
  }

  /** Moves an idea along its life cycle; 409 for a move the life cycle does not have. */
  async changeStatus(id: number, input: StatusChangeInput): Promise<IdeaView> {
    await this.syncWithJobs();
    const idea = await this.require(id);
    const from = idea.status as IdeaStatus;
    const to = input.status;
    const relink = from === 'printing' && to === 'printing' && input.job_id !== undefined && input.job_id !== idea.job_id;
    if (from === to && !relink) return ideaView(idea);
    if (from !== to && !canMove(from, to)) {
      throw conflict('INVALID_STATUS_TRANSITION', `An idea cannot move from ${from} to ${to}`, {
        idea_id: id,
        from,
        to,
        allowed: IDEA_TRANSITIONS[from],
      });
    }
    let jobCompleted = false;
    if (input.job_id !== undefined) {
      const job = await this.store.jobs.get(input.job_id);
      if (!job) throw bodyError('job_id', `no job ${input.job_id}`, 'not_found');
      jobCompleted = job.status === 'completed';
    }
    const now = nowIso();
    const patch: IdeaPatch = { status: to, status_changed_at: now, updated_at: now };
    if (to === 'printing') patch.job_id = input.job_id ?? (from === 'printing' ? idea.job_id : null);
    // Back to idea or planned: the print link no longer holds. Completed and archived keep it as history.
    if (to === 'idea' || to === 'planned') patch.job_id = null;
    // A job that has already completed completes its idea at once.
    if (to === 'printing' && jobCompleted) patch.status = 'completed';
    if (!(await this.store.ideas.transition(id, from, patch))) {
      throw conflict('INVALID_STATUS_TRANSITION', `Idea ${id} changed while it was being moved; try again`, { idea_id: id });
    }
    return ideaView(await this.require(id));
  }

  /** Reads the page again; answers the idea (metadata_refresh_needed stays true when the page still can't be read). */
  async refreshMetadata(id: number): Promise<IdeaView> {
    const idea = await this.require(id);
    const model = idea.source_url ? recogniseModelUrl(idea.source_url) : null;
    if (!model?.ok || idea.model_id === null) {
      throw conflict('NO_SOURCE_PAGE', `Idea ${id} has no model page of a platform to read`, { idea_id: id, source_platform: idea.source_platform });
    }
    await this.pages.apply(idea, model.model);
    return ideaView(await this.require(id));
  }

  // ---- pages ----------------------------------------------------------------

  /** One background round: a few ideas still missing their metadata, least recently tried first. */
  async retryMetadata(): Promise<number> {
    return this.pages.retry(this.retryBatch, () => this.closed);
  }

  // ---- jobs -----------------------------------------------------------------

  /** Printing ideas whose job has completed become completed (checked on read, and on job_update events). */
  async syncWithJobs(jobId?: number): Promise<number[]> {
    return this.store.ideas.completeFollowingJobs(nowIso(), jobId);
  }

  /** Completes the ideas of `jobId` and of the completions due with it (none left: an earlier task took it along). */
  private async followDue(jobId: number): Promise<void> {
    if (this.closed || !this.due.has(jobId)) return;
    const jobIds = [jobId];
    this.due.delete(jobId);
    for (const id of this.due) {
      if (jobIds.length >= FOLLOW_BATCH) break;
      jobIds.push(id);
    }
    for (const id of jobIds) this.due.delete(id);
    const moved = await this.store.ideas.completeFollowingJobs(nowIso(), jobIds);
    if (moved.length > 0) this.log.info({ job_ids: jobIds, idea_ids: moved }, 'ideas: completed with their job');
  }

  /** Completes the ideas of every completed job (the catch-up of a full backlog). */
  private async followJob(): Promise<void> {
    if (this.closed) return;
    const moved = await this.syncWithJobs();
    if (moved.length > 0) this.log.info({ idea_ids: moved }, 'ideas: completed with their job');
  }

  private async require(id: number): Promise<IdeaRecord> {
    const idea = await this.store.ideas.get(id);
    if (!idea) throw notFound('IDEA_NOT_FOUND', `Idea ${id} not found`, { idea_id: id });
    return idea;
  }
}
