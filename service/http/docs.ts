/**
 * Interactive API documentation, every asset served by the service itself
 * (no CDN: print farms run on closed networks): Swagger UI at /docs and
 * ReDoc at /redoc. The ReDoc bundle is put into dist/assets by the build.
 */
import fs from 'node:fs';
import path from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import { PACKAGE_ROOT } from '../config';
import { ApiError } from './errors';

const REDOC_BUNDLE = path.join(PACKAGE_ROOT, 'dist', 'assets', 'redoc.standalone.js');

const redocPage = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${title}</title>
  <link rel="icon" href="data:,">
  <style>body { margin: 0; padding: 0; }</style>
</head>
<body>
  <redoc spec-url="api/v1/openapi.json"></redoc>
  <script src="redoc/redoc.standalone.js"></script>
</body>
</html>
`;

/** The docs pages may be framed by our own pages only (no clickjacking of the "Try it out" buttons). */
const noForeignFrames: RequestHandler = (_req, res, next) => {
  res.setHeader('X-Frame-Options', 'SAMEORIGIN');
  res.setHeader('Content-Security-Policy', "frame-ancestors 'self'");
  next();
};

export function docsRouter(document: object): Router {
  const router = express.Router();
  router.use(['/docs', '/redoc'], noForeignFrames);
  const uiOptions = { customSiteTitle: 'Printfarm API', swaggerOptions: { validatorUrl: null } };
  router.use('/docs', swaggerUi.serveFiles(document, uiOptions), swaggerUi.setup(document, uiOptions));
  router.get('/redoc', (req, res) => {
    // The page loads the spec and the bundle relative to itself: /redoc -> /api/v1/openapi.json.
    if (req.originalUrl.split('?')[0].endsWith('/')) return res.redirect(301, '../redoc');
    res.type('html').send(redocPage('Printfarm API'));
  });
  router.get('/redoc/redoc.standalone.js', (_req, res, next) => {
    if (!fs.existsSync(REDOC_BUNDLE)) return next(new ApiError(503, 'DOCS_NOT_BUILT', 'ReDoc bundle missing: run `npm run build`', {}));
    // dotfiles 'allow': the package is often installed below a dot directory (~/.node-red/node_modules).
    res.type('application/javascript').sendFile(REDOC_BUNDLE, { maxAge: '1d', dotfiles: 'allow' });
  });
  router.get('/favicon.ico', (_req, res) => {
    res.status(204).end();
  });
  return router;
}
