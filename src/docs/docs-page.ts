import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/*
 * Only this service's own address: the page and its assets come from the npm package (@fastify/swagger-ui ships
 * Swagger UI's files), never a CDN, so it works offline. Swagger UI sets inline styles, hence 'unsafe-inline' for
 * styles only; it has no validator badge (validatorUrl is null), so nothing is ever fetched from elsewhere.
 */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";

const HTML = ['text/html'];
const JAVASCRIPT = ['text/javascript', 'application/javascript'];
const YAML = ['application/yaml', 'application/x-yaml', 'text/yaml'];
/** Swagger UI's other files, served by one wildcard route: whatever type the file has. */
const FILES = ['text/css', ...JAVASCRIPT, 'image/png', 'image/svg+xml', 'text/html', 'application/json', 'text/plain'];

/**
 * What each route of the page answers with, so Accept is weighed on that route's own types (README, `Accept`):
 * `Accept: image/png` on the page itself is 406, as on any route that has no such type.
 */
function answersOf(url: string): string[] {
  const path = url.replace(/\/+$/, '');
  if (path === '/docs' || path.endsWith('.html')) return HTML;
  if (path.endsWith('.js')) return JAVASCRIPT;
  if (path === '/docs/json' || path.endsWith('/uiConfig') || path.endsWith('/initOAuth')) return ['application/json'];
  if (path === '/docs/yaml') return YAML;
  return FILES;
}

/**
 * GET /docs (public): a browsable API reference, Swagger UI rendering the OpenAPI document (which links the
 * AsyncAPI document and the problem catalogue in its description). Its files are no part of the API: they are
 * hidden from the document, and public like the document itself.
 */
export async function docsPage(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route) => {
    // The page and its files answer with their own types: an Accept naming only those is no reason for a 406.
    route.config = { ...route.config, public: true, answers: answersOf(route.url) };
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    staticCSP: CSP,
    theme: { title: 'hookstream API reference' },
    uiConfig: { layout: 'BaseLayout', docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0 },
  });
}
