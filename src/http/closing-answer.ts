import type { Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';

/**
 * How long a closing server waits at most for its kept-alive connections to bring their next request (or close)
 * before it closes the idle ones. A client sending on a connection just as the server closes it gets a reset, and
 * cannot tell whether its POST was taken; one that sends within the drain gets the 503 below, which closes the
 * connection.
 */
export const DRAIN_LIMIT_MS = 1000;
/**
 * The drain ends sooner once no request or connection has come for this long: clients that keep sending have each
 * been answered and their connections closed by then (they send again within milliseconds), and a process whose
 * clients sit idle does not wait the whole limit at every stop. It is also what every stop of a listening server
 * takes at least: a connection the system queued as the close began is taken and answered in that time.
 */
export const DRAIN_QUIET_MS = 200;

/** The drain's bounds: DRAIN_LIMIT_MS and DRAIN_QUIET_MS unless given. */
export interface DrainBounds {
  limitMs?: number;
  quietMs?: number;
}

interface Connections {
  open: Set<Socket>;
  /**
   * when a request (or a connection) last came while the server was closing (performance.now(): a clock step cannot
   * stretch a drain)
   */
  lastRequestAt: number;
}

const connectionsOf = new WeakMap<Server, Connections>();

/**
 * A request that reaches a server already closing (on a kept-alive connection) is a 503 Problem like any other:
 * Fastify's own answer (`return503OnClosing`) is plain JSON with no Retry-After and no request id, which a client
 * branching on application/problem+json would not take for "try again". The answer closes the connection.
 */
export const closingAnswerPlugin = fp(
  async (app: FastifyInstance) => {
    let closing = false;
    const connections: Connections = { open: new Set(), lastRequestAt: 0 };
    connectionsOf.set(app.server, connections);
    app.server.on('connection', (socket: Socket) => {
      connections.open.add(socket);
      socket.once('close', () => connections.open.delete(socket));
      // A connection made while closing is activity, as a request is: its request is on its way.
      if (closing) connections.lastRequestAt = performance.now();
    });
    app.addHook('preClose', async () => {
      closing = true;
    });
    /** connections that brought a request after the close began: its 503 closes them, after what is before it */
    const askedWhileClosing = new WeakSet<Socket>();
    // A request taken before the close began (waiting on Kafka, say) is answered as usual, and its answer closes its
    // connection: kept alive, the client would send its next request on a connection the stopping process is about
    // to drop (a reset, and a client that cannot tell whether its POST was taken). Unless a request pipelined behind
    // it came meanwhile: that one's 503 closes the connection, and a close before it would leave it unanswered.
    // Every answer, bodyless ones (204) too, passes onSend; one flag to test while the server is not closing.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (closing && !askedWhileClosing.has(request.raw.socket)) reply.header('connection', 'close');
      done(null, payload);
    });
    addRequestStep(app, (request) => {
      if (!closing) return;
      connections.lastRequestAt = performance.now();
      askedWhileClosing.add(request.raw.socket);
      throw new ProblemError('not-ready', 'This instance is shutting down; send the request again.', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    });
  },
  { name: 'hookstream-closing-answer' },
);

/**
 * The drain: the last step of a close before the server's connections are closed. Fastify runs the root's preClose
 * hooks, then each child context's in the order they were registered; this one is a child registered after the
 * routes (so not wrapped in fastify-plugin), so their hooks have ended the waits and streams (which would hold their
 * connections) when it begins. It ends once no request or new connection has come for `quietMs`, or after
 * `limitMs`. The server listens until then: a connection made meanwhile (one the system had queued as the close
 * began, a client's retry) gets the 503 too. Closed at once, the listener reset those the system had queued, and
 * their clients could not tell whether a POST was taken (a probe: 25 to 42 of 60 connections made in a burst with
 * the SIGTERM).
 */
export async function drainPlugin(
  app: FastifyInstance,
  { limitMs = DRAIN_LIMIT_MS, quietMs = DRAIN_QUIET_MS }: DrainBounds,
): Promise<void> {
  app.addHook('preClose', async () => {
    await drain(connectionsOf.get(app.server), app.server.listening, limitMs, quietMs);
    // net's close, not http's: both stop taking connections, but http's (Node ≥ 19) also closes the idle ones at
    // once, which the drain came first to avoid. Fastify's own close of the server follows (it takes the
    // ERR_SERVER_NOT_RUNNING that comes of it as closed); the server's 'close' event fires for each. Nothing here
    // listens for it.
    if (app.server.listening) NetServer.prototype.close.call(app.server);
  });
}

/**
 * Until no request or connection has come for `quietMs`, or `limitMs` has passed. A server not listening (an app
 * used through inject) with no connection open has nothing to wait for.
 */
async function drain(
  connections: Connections | undefined,
  listening: boolean,
  limitMs: number,
  quietMs: number,
): Promise<void> {
  if (connections === undefined) return;
  const began = performance.now();
  const deadline = began + limitMs;
  for (;;) {
    const quietUntil = Math.max(began, connections.lastRequestAt) + quietMs;
    const until = Math.min(deadline, quietUntil);
    if ((!listening && connections.open.size === 0) || performance.now() >= until) return;
    await anyClosed([...connections.open], until - performance.now());
  }
}

/** Resolves when one of the sockets closes, or after `ms`. */
function anyClosed(sockets: Socket[], ms: number): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      for (const s of sockets) s.off('close', finish);
      resolve();
    };
    const timer = setTimeout(finish, Math.max(0, ms));
    for (const s of sockets) s.once('close', finish);
  });
}
