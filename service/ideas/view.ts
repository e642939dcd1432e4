/** An idea as the API answers it, and the file information a user may give by hand. */
import type { IdeaFileInfo, IdeaRecord } from '../db/repositories/ideas';
import type { CreateIdeaInput, IdeaView } from '../schemas/ideas';
import type { IdeaStatus } from './lifecycle';
import type { IdeaPlatform } from './platforms';

const EMPTY_FILE_INFO: IdeaFileInfo = { file_count: null, formats: [], files: [] };

export function normaliseFileInfo(input: NonNullable<CreateIdeaInput['file_info']>): IdeaFileInfo {
  const files = (input.files ?? []).map((f) => ({ name: f.name, format: f.format ?? null, size: f.size ?? null }));
  const formats = input.formats ?? [...new Set(files.map((f) => f.format).filter((f): f is string => !!f))];
  return { file_count: input.file_count ?? (files.length > 0 ? files.length : null), formats, files };
}

export function ideaView(idea: IdeaRecord): IdeaView {
  return {
    id: idea.id,
    title: idea.title,
    creator_name: idea.creator_name,
    source_platform: idea.source_platform as IdeaPlatform,
    source_url: idea.source_url,
    model_id: idea.model_id,
    thumbnail_url: idea.thumbnail_url,
    description: idea.description,
    file_info: idea.file_info ?? EMPTY_FILE_INFO,
    notes: idea.notes,
    tags: idea.tags,
    is_business: idea.is_business,
    status: idea.status as IdeaStatus,
    job_id: idea.job_id,
    metadata_refresh_needed: idea.metadata_refresh_needed,
    metadata_fetched_at: idea.metadata_fetched_at,
    status_changed_at: idea.status_changed_at,
    created_at: idea.created_at,
    updated_at: idea.updated_at,
  };
}
