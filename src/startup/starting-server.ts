import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { HAL_MEDIA_TYPE } from '../http/hal';
import { instanceUri } from '../http/instance-uri';
import { PROBLEM_CONTENT_TYPE } from '../http/problem-plugin';
import { requestIdOf } from '../http/request-id';
import { problem } from '../problems/problem-detail';
import { listenFailure } from './listen-errors';

/** Seconds a client is asked to wait before it tries again while the service starts. */
const RETRY_AFTER_SECONDS = '5';

export interface StartingServer {
  /** Lets the port go (and every connection to it) for the service's own server; a second call does nothing. */
  close(): Promise<void>;
}

function answer(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0];
  const id = requestIdOf(req);
  const headers = { 'x-request-id': id, 'cache-control': 'no-store' };
  let status = 503;
  let type = PROBLEM_CONTENT_TYPE;
  let body: object;
  if (path === '/health/live' && (req.method === 'GET' || req.method === 'HEAD')) {
    status = 200;
    type = HAL_MEDIA_TYPE;
    body = { _links: { self: { href: '/health/live' } }, status: 'up' };
  } else {
    const detail = 'The service is starting: it is waiting for Kafka. Try again shortly.';
    const checks = path === '/health' || path === '/health/ready' ? { checks: { kafka: 'starting' } } : {};
    body = problem('not-ready', detail, { instance: instanceUri(path), logref: id, ...checks });
    Object.assign(headers, { 'retry-after': RETRY_AFTER_SECONDS });
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/**
 * Holds PORT from the moment the process starts until the service's own server takes it: a start waits for Kafka
 * (up to KAFKA_STARTUP_TIMEOUT_MS, 2 minutes by default), and a liveness probe that found no port for that long would
 * have the process restarted in the middle of its patient start. `/health/live` answers 200; every other request,
 * the readiness probes included, a 503 not-ready Problem with Retry-After. A taken port is found here, at once.
 */
export async function listenWhileStarting(host: string, port: number): Promise<StartingServer> {
  const server = createServer(answer);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenFailure(err, host, port)));
    server.listen({ host, port, exclusive: true }, () => resolve());
  });
  let closed: Promise<void> | undefined;
  return {
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
