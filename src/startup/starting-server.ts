import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { HAL_MEDIA_TYPE } from '../http/hal';
import { instanceUri } from '../http/instance-uri';
import { PROBLEM_CONTENT_TYPE } from '../http/problem-plugin';
import { requestIdOf } from '../http/request-id';
import { problem } from '../problems/problem-detail';
import { listenFailure } from './listen-errors';

/** Seconds a client is asked to wait before it tries again while the service starts. */
const RETRY_AFTER_SECONDS = '5';

/** What the service's own server needs of the server holding its port: the listening socket, handed over. */
export interface HeldPort {
  /** the listening socket, for the service's server to listen on (`handle`); undefined once closed */
  handle(): object | undefined;
  /**
   * The service's server listens on it. The connections this server had accepted send their next request to
   * `service` (with `Connection: close`, so the client connects again), not to this server's 503.
   */
  handedOver(service: Server): void;
  /** Lets the port go (and every connection to it), unless handed over; a second call does nothing. */
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
 *
 * The service's server then listens on this server's socket (Node's `listen(handle)`), which never stops accepting:
 * closing it first and binding again left the port refusing connections, or resetting them, for up to 5 s on a
 * loaded machine (the app's ready in between), long enough for a liveness probe to fail.
 */
export async function listenWhileStarting(host: string, port: number, keepAliveTimeoutMs: number): Promise<HeldPort> {
  let service: Server | undefined;
  const server = createServer((req, res) => {
    if (!service) return answer(req, res);
    // A connection accepted before the handover, kept alive: its request is the service's. Its last one here.
    res.setHeader('connection', 'close');
    service.emit('request', req, res);
  });
  // As long as the service keeps a connection: a load balancer's, kept from before the handover, is then the service's.
  server.keepAliveTimeout = keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenFailure(err, host, port)));
    server.listen({ host, port, exclusive: true }, () => resolve());
  });
  // `_handle` is what Node's documented `listen(handle)` takes from "anything with an underlying _handle member".
  const owner = server as unknown as { _handle: object | null };
  let closed: Promise<void> | undefined;
  return {
    // `localhost` is bound by Fastify once per address it resolves to, each binding with the listen options given:
    // they would all take this one socket. It is let go and bound again instead, as before the handover existed.
    handle: () => (closed || service || host === 'localhost' ? undefined : (owner._handle ?? undefined)),
    handedOver(to) {
      service = to;
      // The socket is the service's now: this server must never close it (its close would stop the service's).
      owner._handle = null;
      // Not closed, as Node's close() would close idle connections too: one of them could be one a client is sending
      // a request on at that moment. They end with the keep-alive timeout the client was told of, or their next
      // request.
    },
    close: () =>
      (closed ??= service
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          })),
  };
}
