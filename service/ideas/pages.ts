/**
 * The model pages behind ideas: read through the guarded PageFetcher (platform hosts only,
 * timeout, size cap), outside any transaction; what a page gives fills in an idea without
 * touching the user's own edits. A page that can't be read is logged, never thrown: the idea
 * stays marked for a metadata refresh, retried in the background.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { IdeaRecord } from '../db/repositories/ideas';
import { nowIso } from '../util/time';
import type { PageFetcher } from './fetcher';
import { extractMetadata, type PageMetadata } from './metadata';
import { recogniseModelUrl, type RecognisedModel } from './platforms';

export class IdeaPages {
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly fetcher: PageFetcher,
    private readonly signal: AbortSignal,
  ) {}

  /** The page's metadata, or null when it can't be read (logged, never thrown). */
  async read(model: RecognisedModel): Promise<PageMetadata | null> {
    try {
      const page = await this.fetcher.fetchPage(model.canonical_url, this.signal);
      const meta = extractMetadata(page.html, page.url);
      if (!meta.title && !meta.description && !meta.thumbnail_url && !meta.creator_name) {
        this.log.warn({ platform: model.platform, model_id: model.model_id }, 'ideas: model page has no usable metadata');
        return null;
      }
      if (page.truncated) this.log.info({ platform: model.platform, model_id: model.model_id, max_bytes: this.fetcher.maxBytes }, 'ideas: model page cut at the size cap');
      return meta;
    } catch (err) {
      this.log.warn({ platform: model.platform, model_id: model.model_id, url: model.canonical_url, reason: (err as Error)?.message ?? String(err) }, 'ideas: model page not read; stored from the URL, metadata refresh needed');
      return null;
    }
  }

  /** Fetches the page and fills in what it gives; user edits (notes, tags, status...) are untouched. */
  async apply(idea: IdeaRecord, model: RecognisedModel): Promise<boolean> {
    const meta = await this.read(model);
    const now = nowIso();
    if (!meta) {
      await this.store.ideas.update(idea.id, { metadata_attempted_at: now });
      return false;
    }
    await this.store.ideas.update(idea.id, {
      title: meta.title ?? idea.title,
      creator_name: meta.creator_name ?? idea.creator_name,
      description: meta.description ?? idea.description,
      thumbnail_url: meta.thumbnail_url ?? idea.thumbnail_url,
      file_info: meta.file_info ?? idea.file_info,
      metadata_refresh_needed: false,
      metadata_fetched_at: now,
      metadata_attempted_at: now,
      updated_at: now,
    });
    return true;
  }

  /** One background round: a few ideas still missing their metadata, least recently tried first. */
  async retry(batch: number, stopped: () => boolean): Promise<number> {
    let filled = 0;
    for (const idea of await this.store.ideas.needingMetadata(batch)) {
      if (stopped()) break;
      const r = idea.source_url ? recogniseModelUrl(idea.source_url) : null;
      if (!r?.ok) {
        await this.store.ideas.update(idea.id, { metadata_refresh_needed: false });
        continue;
      }
      if (await this.apply(idea, r.model)) filled += 1;
    }
    return filled;
  }
}
