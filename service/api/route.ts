/** The route helpers live in `service/http/route.ts`, shared with the aggregator; the farm's routers import them from here. */
export * from '../http/route';
