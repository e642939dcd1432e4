/**
 * A route is declared once, with its zod schemas: the same declaration
 * validates the request, types the handler and writes the OpenAPI document,
 * so the documentation cannot drift from the server.
 *
 * Shared HTTP plumbing of both services: the farm's `api/` and the aggregator's routes declare
 * their routes here, so the aggregator does not reach into the farm's HTTP layer.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { validationError } from '../errors';

export type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteSpec<P = undefined, Q = undefined, B = undefined> {
  method: Method;
  /** OpenAPI-style path relative to the router's base, e.g. `/printers/{printer_id}`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Success status (default 200) and its body schema. */
  status?: number;
  response: z.ZodType;
  /** Another success status answered with the same body schema (200 "already there" beside 201 "created"). */
  alsoStatus?: { status: number; description: string };
  /** Error statuses worth documenting besides 400/422/500. */
  errors?: number[];
  /** A non-JSON request body (e.g. multipart), for the documentation only: the handler reads it itself. */
  rawBody?: { contentType: string; schema: Record<string, unknown> };
  /** A non-JSON success response (e.g. a file), for the documentation only. */
  rawResponse?: { contentType: string; description: string };
  handler(input: { params: Out<P>; query: Out<Q>; body: Out<B>; req: Request; res: Response }): unknown;
}

/** A reply with a status other than the route's default. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

// The concrete schema types are erased once routes are collected in a list.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

export function defineRoute<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  spec: RouteSpec<P, Q, B>,
): AnyRoute {
  return spec as AnyRoute;
}

export const expressPath = (openapiPath: string) => openapiPath.replace(/\{(\w+)\}/g, ':$1');

function parse(schema: z.ZodType | undefined, value: unknown, location: 'path' | 'query' | 'body'): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(location, result.error);
  return result.data;
}

export interface MountOptions {
  /** Where the router is mounted: the route label (`res.locals.route`) is prefix + template, for metrics. */
  prefix?: string;
  /** Middleware a route gets before its handler (a tighter rate limit). */
  before?: (route: AnyRoute) => RequestHandler | undefined;
}

export function mountRoutes(router: Router, routes: AnyRoute[], options: MountOptions = {}): void {
  for (const route of routes) {
    const label: RequestHandler = (_req, res, next) => {
      res.locals.route = `${options.prefix ?? ''}${route.path}`;
      next();
    };
    const before = options.before?.(route);
    router[route.method](expressPath(route.path), ...(before ? [label, before] : [label]), async (req, res) => {
      const params = parse(route.params, req.params, 'path');
      const query = parse(route.query, req.query, 'query');
      // A body that is not JSON (or none) is validated as an empty object: the error names the missing fields.
      const body = parse(route.body, req.body ?? {}, 'body');
      const result = await route.handler({ params, query, body, req, res } as never);
      if (res.headersSent) return;
      if (result instanceof Reply) res.status(result.status).json(result.body);
      else res.status(route.status ?? 200).json(result);
    });
  }
}
