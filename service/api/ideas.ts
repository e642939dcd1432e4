import type { ServiceContext } from '../context';
import { describeTransitions } from '../ideas/lifecycle';
import { IMPORT_PLATFORMS, TRENDING_PLATFORMS, type TrendingPlatform } from '../ideas/platforms';
import {
  CreateIdeaBody,
  Idea,
  IdeaDeleted,
  IdeaIdParams,
  IdeaList,
  IdeaListQuery,
  ImportIdeaBody,
  StatusChangeBody,
  TrendingIdParams,
  TrendingList,
  TrendingRefreshed,
  TrendingRefreshQuery,
  UpdateIdeaBody,
} from '../schemas/ideas';
import { defineRoute, Reply, type AnyRoute } from '../http/route';

const TAG = 'Ideas';

const TRENDING_TEXT =
  'Automatic trending discovery is not active, so the list is empty unless the cache holds items; the shape is always the same. ' +
  'The cache lives 6 hours: a read after that answers with the cache as it is (`stale: true`) and refreshes it in the background. ' +
  'Fetch failures are logged, never shown.';

export function ideaRoutes({ ideas }: ServiceContext): AnyRoute[] {
  const trendingList = (platform: 'all' | TrendingPlatform) =>
    defineRoute({
      method: 'get',
      path: `/ideas/trending/${platform}`,
      tag: TAG,
      summary: platform === 'all' ? 'Trending models of all platforms' : `Trending models on ${platform}`,
      description: TRENDING_TEXT,
      response: TrendingList,
      handler: () => ideas.trending.list(platform),
    });
  return [
    // Trending first: fixed paths before the /ideas/{idea_id} patterns.
    trendingList('all'),
    ...TRENDING_PLATFORMS.map(trendingList),
    defineRoute({
      method: 'post',
      path: '/ideas/trending/refresh',
      tag: TAG,
      summary: 'Refresh the trending cache now',
      description: `Refreshes one platform (\`platform=makerworld|printables\`) or all, and answers when done. ${TRENDING_TEXT}`,
      query: TrendingRefreshQuery,
      response: TrendingRefreshed,
      handler: ({ query }) => ideas.trending.refresh(query.platform),
    }),
    defineRoute({
      method: 'post',
      path: '/ideas/trending/{trending_id}/save',
      tag: TAG,
      summary: 'Save a trending item as a personal idea',
      description:
        '201 and the new idea (personal, status idea, marked for a metadata refresh), or 200 and the idea that already keeps this model. 404 TRENDING_ITEM_NOT_FOUND when the cache does not hold the item.',
      params: TrendingIdParams,
      status: 201,
      response: Idea,
      alsoStatus: { status: 200, description: 'The idea that already keeps this model' },
      handler: async ({ params }) => {
        const saved = await ideas.saveTrending(params.trending_id);
        return saved.created ? saved.idea : new Reply(200, saved.idea);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/ideas/import',
      tag: TAG,
      summary: 'Import an idea from a model page URL',
      description:
        `Recognises the platform (${IMPORT_PLATFORMS.join(', ')}) and the model id from the URL and reads the page's OpenGraph / JSON-LD data ` +
        '(title, creator, description, thumbnail, files). Only the platform hosts are ever fetched (5 s timeout, 2 MB cap). ' +
        'When the page cannot be read the idea is still stored from the URL (title from the slug) with `metadata_refresh_needed: true`. ' +
        '201 and the new idea; 200 and the existing idea when the model is already kept (the same platform and model id are stored once). ' +
        'Another host, an IP address, a scheme other than http(s), credentials or a port in the URL: 422 VALIDATION_ERROR naming `url`.',
      body: ImportIdeaBody,
      status: 201,
      response: Idea,
      alsoStatus: { status: 200, description: 'The idea that already keeps this model' },
      handler: async ({ body }) => {
        const saved = await ideas.import(body);
        return saved.created ? saved.idea : new Reply(200, saved.idea);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/ideas',
      tag: TAG,
      summary: 'List ideas',
      description: 'Filters combine. The summary counts all ideas per status.',
      query: IdeaListQuery,
      response: IdeaList,
      handler: ({ query }) => ideas.list(query),
    }),
    defineRoute({
      method: 'post',
      path: '/ideas',
      tag: TAG,
      summary: 'Create an idea by hand',
      description:
        'A `source_url` of a platform model page gives the idea its platform and model id (409 IDEA_ALREADY_EXISTS when that model is already kept); the page is not read here.',
      body: CreateIdeaBody,
      status: 201,
      response: Idea,
      errors: [409],
      handler: ({ body }) => ideas.create(body),
    }),
    defineRoute({
      method: 'get',
      path: '/ideas/{idea_id}',
      tag: TAG,
      summary: 'Idea detail',
      params: IdeaIdParams,
      response: Idea,
      handler: ({ params }) => ideas.detail(params.idea_id),
    }),
    defineRoute({
      method: 'put',
      path: '/ideas/{idea_id}',
      tag: TAG,
      summary: 'Change title, notes, tags, business/personal marker or metadata of an idea',
      description: 'The status changes through POST /ideas/{idea_id}/status.',
      params: IdeaIdParams,
      body: UpdateIdeaBody,
      response: Idea,
      handler: ({ params, body }) => ideas.update(params.idea_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/ideas/{idea_id}',
      tag: TAG,
      summary: 'Delete an idea',
      params: IdeaIdParams,
      response: IdeaDeleted,
      handler: ({ params }) => ideas.remove(params.idea_id),
    }),
    defineRoute({
      method: 'post',
      path: '/ideas/{idea_id}/status',
      tag: TAG,
      summary: 'Move an idea along its life cycle',
      description:
        `Moves: ${describeTransitions()}. Any other move is 409 INVALID_STATUS_TRANSITION; asking for the current status changes nothing. ` +
        'Moving to printing may link the job that prints it (`job_id`, 422 when there is no such job); the idea becomes completed when that job completes.',
      params: IdeaIdParams,
      body: StatusChangeBody,
      response: Idea,
      errors: [409],
      handler: ({ params, body }) => ideas.changeStatus(params.idea_id, body),
    }),
    defineRoute({
      method: 'post',
      path: '/ideas/{idea_id}/refresh-metadata',
      tag: TAG,
      summary: "Read an imported idea's model page again",
      description:
        'Fills in title, creator, description, thumbnail and files from the page (notes, tags and status stay). When the page still cannot be read the idea comes back unchanged with `metadata_refresh_needed: true`. 409 NO_SOURCE_PAGE for ideas without a platform model page.',
      params: IdeaIdParams,
      response: Idea,
      errors: [409],
      handler: ({ params }) => ideas.refreshMetadata(params.idea_id),
    }),
  ];
}
