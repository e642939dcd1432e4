import { z } from 'zod';
import { describeTransitions, IDEA_STATUSES } from '../ideas/lifecycle';
import { IDEA_PLATFORMS, IMPORT_PLATFORMS, MAX_URL_LENGTH, PLATFORM_NAMES, recogniseModelUrl, TRENDING_PLATFORMS, type ImportPlatform } from '../ideas/platforms';
import { decimalParam, nullableTimestamp, Pagination, pageQuery, queryBoolean, timestamp } from './common';

export const IdeaPlatform = z.enum(IDEA_PLATFORMS).meta({ description: 'Source platform; `manual` for an entry made by hand' });
export const IdeaStatus = z.enum(IDEA_STATUSES);
export const TrendingPlatform = z.enum(TRENDING_PLATFORMS);

/** No control or invisible characters in one-line texts. */
const oneLine = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .refine((v) => !/[\p{Cc}\p{Cf}]/u.test(v), { message: 'must not contain control characters' });
const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v), { message: 'must not contain control characters' });

/** An absolute http(s) URL without credentials (stored only: the service never fetches it). */
const httpUrl = z
  .string()
  .trim()
  .max(MAX_URL_LENGTH)
  .refine(
    (v) => {
      try {
        const u = new URL(v);
        return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password;
      } catch {
        return false;
      }
    },
    { message: 'must be an absolute http(s) URL without credentials' },
  )
  .meta({ format: 'uri' });

const Tag = oneLine(50)
  .min(1)
  .refine((v) => !v.includes(','), { message: 'must not contain a comma' });

/** Tags, trimmed, duplicates (ignoring case) dropped. */
const Tags = z
  .array(Tag)
  .max(30)
  .transform((tags) => {
    const seen = new Set<string>();
    return tags.filter((t) => !seen.has(t.toLowerCase()) && seen.add(t.toLowerCase()));
  })
  .meta({ description: 'Free tags (at most 30, each up to 50 characters, no commas); duplicates ignoring case are dropped' });

const FileInfoInput = z.strictObject({
  file_count: z.number().int().min(0).max(100_000).nullable().optional(),
  formats: z.array(oneLine(20).min(1)).max(20).optional(),
  files: z
    .array(
      z.strictObject({
        name: oneLine(255).min(1),
        format: oneLine(20).nullable().optional(),
        size: oneLine(50).nullable().optional(),
      }),
    )
    .max(100)
    .optional(),
});

export const FileInfo = z
  .object({
    file_count: z.number().int().nullable().meta({ description: 'How many files the model has, when known' }),
    formats: z.array(z.string()).meta({ description: 'File formats, e.g. STL, 3MF' }),
    files: z.array(z.object({ name: z.string(), format: z.string().nullable(), size: z.string().nullable() })),
  })
  .meta({ description: 'File information of the model, as its page tells it' });

export const IdeaIdParams = z.object({
  idea_id: decimalParam(z.number().int().min(1).max(Number.MAX_SAFE_INTEGER)).meta({ description: 'Idea id (integer)' }),
});

/** `tags=a,b` or `tags=a&tags=b`: ideas that carry every one of them. */
const TagsQuery = z
  .union([z.string().max(1000), z.array(z.string().max(100)).max(30)])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter(Boolean))
  .pipe(z.array(z.string().max(50)).max(30))
  .meta({ description: 'Comma-separated tags (or the parameter repeated); ideas that carry all of them (case ignored)' });

export const IdeaListQuery = z.object({
  status: IdeaStatus.optional(),
  source_platform: IdeaPlatform.optional(),
  tags: TagsQuery.optional(),
  is_business: queryBoolean.optional().meta({ description: 'true: business ideas; false: personal ones' }),
  search: z.string().trim().min(1).max(200).optional().meta({ description: 'Text in the title, creator, description or notes (case ignored)' }),
  ...pageQuery,
  order_by: z.enum(['created_at', 'updated_at', 'title', 'status_changed_at']).default('created_at'),
  order_dir: z.enum(['asc', 'desc']).default('desc'),
});

const editable = {
  creator_name: oneLine(200).nullable().optional(),
  thumbnail_url: httpUrl.nullable().optional(),
  description: text(10_000).nullable().optional(),
  file_info: FileInfoInput.nullable().optional(),
  notes: text(10_000).nullable().optional(),
};

const platformMismatch = (platform: ImportPlatform) => `is not a ${PLATFORM_NAMES[platform]} model page URL`;

export const CreateIdeaBody = z
  .strictObject({
    title: oneLine(300).min(1),
    ...editable,
    source_platform: IdeaPlatform.optional(),
    source_url: httpUrl.optional().meta({
      description:
        'A model page of one of the five platforms (the idea then takes its platform and model id: the same model can be kept once), or for a manual idea any http(s) link. Never fetched here; use POST /ideas/import to read the page.',
    }),
    tags: Tags.default([]),
    is_business: z.boolean().default(false),
  })
  .superRefine((body, ctx) => {
    if (body.source_url === undefined) return;
    const r = recogniseModelUrl(body.source_url);
    const explicit = body.source_platform;
    if (r.ok && explicit !== undefined && explicit !== r.model.platform) {
      ctx.addIssue({ code: 'custom', path: ['source_platform'], message: `does not match the source_url, a ${PLATFORM_NAMES[r.model.platform]} page` });
    } else if (!r.ok && explicit !== undefined && explicit !== 'manual') {
      ctx.addIssue({ code: 'custom', path: ['source_url'], message: platformMismatch(explicit) });
    }
  });

export const UpdateIdeaBody = z
  .strictObject({
    title: oneLine(300).min(1).optional(),
    ...editable,
    tags: Tags.optional(),
    is_business: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });

export const ImportIdeaBody = z.strictObject({
  url: z
    .string()
    .max(MAX_URL_LENGTH * 2)
    .superRefine((url, ctx) => {
      const r = recogniseModelUrl(url);
      if (!r.ok) ctx.addIssue({ code: 'custom', message: r.reason });
    })
    .meta({
      description: `Model page of ${IMPORT_PLATFORMS.join(', ')} (https or http, the platform's own host, default port, no credentials), e.g. https://www.printables.com/model/123456-slug`,
      format: 'uri',
    }),
  notes: text(10_000).optional(),
  tags: Tags.default([]),
  is_business: z.boolean().default(false),
});

export const StatusChangeBody = z
  .strictObject({
    status: IdeaStatus.meta({ description: `Allowed moves: ${describeTransitions()}` }),
    job_id: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional().meta({
      description: 'With status printing: the job that prints the idea (it must exist). The idea becomes completed when that job completes.',
    }),
  })
  .superRefine((b, ctx) => {
    if (b.job_id !== undefined && b.status !== 'printing') ctx.addIssue({ code: 'custom', path: ['job_id'], message: 'only with status printing' });
  });

export const Idea = z.object({
  id: z.number().int(),
  title: z.string(),
  creator_name: z.string().nullable(),
  source_platform: IdeaPlatform,
  source_url: z.string().nullable(),
  model_id: z.string().nullable().meta({ description: "The platform's model id (digits; the slug on Cults3D); null for manual ideas" }),
  thumbnail_url: z.string().nullable(),
  description: z.string().nullable(),
  file_info: FileInfo,
  notes: z.string().nullable(),
  tags: z.array(z.string()),
  is_business: z.boolean().meta({ description: 'true: business; false: personal' }),
  status: IdeaStatus,
  job_id: z.number().int().nullable().meta({ description: 'The job printing this idea (status printing or completed)' }),
  metadata_refresh_needed: z.boolean().meta({ description: 'The page could not be read at import: POST /ideas/{idea_id}/refresh-metadata (or the background retry) fills the metadata in later' }),
  metadata_fetched_at: nullableTimestamp,
  status_changed_at: timestamp,
  created_at: timestamp,
  updated_at: timestamp,
});

export const IdeaList = z.object({
  ideas: z.array(Idea),
  pagination: Pagination,
  summary: z.object({
    total_ideas: z.number().int(),
    by_status: z.object(Object.fromEntries(IDEA_STATUSES.map((s) => [s, z.number().int()])) as Record<(typeof IDEA_STATUSES)[number], z.ZodNumber>),
  }),
});

export const IdeaDeleted = z.object({ id: z.number().int(), message: z.string(), deleted_at: timestamp });

export const TrendingIdParams = z.object({
  trending_id: z
    .string()
    .min(1)
    .max(300)
    .meta({ description: 'Trending item id as listed, `<platform>:<model_id>` (e.g. makerworld:123456)' }),
});

export const TrendingItem = z.object({
  id: z.string().meta({ description: '`<platform>:<model_id>`' }),
  platform: TrendingPlatform,
  model_id: z.string(),
  rank: z.number().int().meta({ description: 'Position in the platform list, from 1' }),
  title: z.string(),
  creator_name: z.string().nullable(),
  source_url: z.string(),
  thumbnail_url: z.string().nullable(),
  description: z.string().nullable(),
  stats: z.record(z.string(), z.number()).nullable().meta({ description: 'Counters the platform shows (likes, downloads...)' }),
  fetched_at: timestamp,
  saved_idea_id: z.number().int().nullable().meta({ description: 'The idea this model is already kept as, if any' }),
});

export const TrendingSource = z.enum(['inactive', 'live']).meta({
  description: '`inactive`: automatic trending discovery is off (the lists hold only what the cache was given); `live`: filled by the discovery source',
});

export const TrendingList = z.object({
  platform: z.enum(['all', ...TRENDING_PLATFORMS]),
  items: z.array(TrendingItem),
  total: z.number().int(),
  source: TrendingSource,
  cached_at: nullableTimestamp.meta({ description: 'When the cache was last filled (the oldest platform for `all`); null before the first refresh' }),
  expires_at: nullableTimestamp.meta({ description: 'cached_at + 6 h; a read after that starts a background refresh' }),
  stale: z.boolean().meta({ description: 'The cache is past its lifetime (a refresh is under way or failed; failures are logged, never shown)' }),
  message: z.string(),
});

export const TrendingRefreshQuery = z.object({
  platform: z
    .enum(['all', ...TRENDING_PLATFORMS])
    .default('all')
    .meta({ description: 'Refresh one platform or all (default)' }),
});

export const TrendingRefreshed = z.object({
  platforms: z.array(TrendingPlatform),
  source: TrendingSource,
  total_items: z.number().int(),
  cached_at: nullableTimestamp,
  expires_at: nullableTimestamp,
  message: z.string(),
});

export type IdeaListFilter = z.output<typeof IdeaListQuery>;
export type CreateIdeaInput = z.output<typeof CreateIdeaBody>;
export type UpdateIdeaInput = z.output<typeof UpdateIdeaBody>;
export type ImportIdeaInput = z.output<typeof ImportIdeaBody>;
export type StatusChangeInput = z.output<typeof StatusChangeBody>;
export type IdeaView = z.output<typeof Idea>;
export type TrendingItemView = z.output<typeof TrendingItem>;
export type TrendingListView = z.output<typeof TrendingList>;
