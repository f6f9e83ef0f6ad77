import { connect, type Socket } from 'node:net';
import { DRAIN_BYTES } from '../../src/http/body-limit';
import { problemType } from '../../src/problems/problem-types';
import { TENANT_A_KEY } from '../support/api-keys';
import { inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * A body over BODY_LIMIT_BYTES (the in-memory api's 64 KiB) is a 413 Problem the client gets to read, whichever way
 * it sends it: announced with Expect: 100-continue (curl does for large bodies), or sent whole at once (fetch, most
 * clients). Over a real socket on loopback: a reset instead of the answer is what a client would see.
 */
let LIMIT: number;
let api: InMemoryApi;
let port: number;
beforeAll(async () => {
  api = await inMemoryApi();
  LIMIT = api.app.initialConfig.bodyLimit as number;
  port = Number(new URL(await api.app.listen({ port: 0, host: '127.0.0.1' })).port);
});
afterAll(() => api.app.close());

const AUTH = `Authorization: Bearer ${TENANT_A_KEY}\r\n`;
/** A second request on the same connection: answered 200 only if the connection survived the refused body. */
const NEXT = `GET /orders?limit=1 HTTP/1.1\r\nHost: x\r\n${AUTH}Connection: close\r\n\r\n`;

const head = (length: number | 'chunked', extra = '') =>
  `POST /orders HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\n` +
  (length === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) +
  `${extra}\r\n`;

/** A connection that collects what the server sends, and says whether it ended in a reset. */
function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<{ reset: boolean }> }> {
  return new Promise((resolve, reject) => {
    let text = '';
    let reset = false;
    const socket = connect(port, '127.0.0.1');
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') reset = true;
      else reject(err);
    });
    const closed = new Promise<{ reset: boolean }>((done) => socket.on('close', () => done({ reset })));
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
  });
}

/** Resolves once `received()` holds what `pattern` matches. */
async function seen(received: () => string, pattern: RegExp, timeoutMs = 10000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pattern.test(received())) {
    if (Date.now() > until) throw new Error(`not seen: ${pattern} in ${JSON.stringify(received().slice(0, 300))}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Writes all of `bytes`, in chunks, waiting for the socket to take each. */
async function send(socket: Socket, bytes: number, chunk = 64 * 1024): Promise<void> {
  const piece = Buffer.alloc(chunk, 'x');
  for (let sent = 0; sent < bytes && !socket.destroyed; sent += chunk) {
    const part = piece.subarray(0, Math.min(chunk, bytes - sent));
    if (!socket.write(part)) await new Promise((r) => socket.once('drain', r));
  }
}

/** The first answer's body, by its Content-Length: more answers may follow it on the connection. */
const problemOf = (answer: string) => {
  const start = answer.indexOf('\r\n\r\n') + 4;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(answer)?.[1]);
  return JSON.parse(answer.slice(start, start + length));
};

describe('a body over the limit', () => {
  test('announced with Expect: 100-continue, is answered 413 before any of it is sent, not with 100 Continue', async () => {
    const c = await open();
    c.socket.write(head(LIMIT + 1, 'Expect: 100-continue\r\n'));
    const closed = await c.closed;
    const answer = c.received();
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toContain('100 Continue');
    expect(problemOf(answer)).toMatchObject({ type: problemType('payload-too-large'), instance: '/orders' });
    expect(problemOf(answer).detail).toContain(`${LIMIT + 1} bytes`);
    expect(closed.reset).toBe(false);
  });

  test('announced within the limit, gets its 100 Continue and is served', async () => {
    const body = JSON.stringify({ orderNumber: 7, itemCount: 1, status: 'open' });
    const c = await open();
    c.socket.write(head(Buffer.byteLength(body), 'Expect: 100-continue\r\nConnection: close\r\n'));
    await seen(c.received, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
    c.socket.write(body);
    await c.closed;
    expect(c.received()).toMatch(/\r\n\r\nHTTP\/1\.1 201 /);
  });

  test('sent whole at once: the client reads the 413, and its connection serves the next request', async () => {
    const c = await open();
    c.socket.write(head(3 * LIMIT));
    await send(c.socket, 3 * LIMIT);
    c.socket.write(NEXT);
    const closed = await c.closed;
    const answer = c.received();
    expect(closed.reset).toBe(false);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(problemOf(answer)).toMatchObject({
      type: problemType('payload-too-large'),
      detail: `The body is larger than the ${LIMIT} bytes taken.`,
    });
    expect(answer).toMatch(/}HTTP\/1\.1 200 /);
  });

  test('chunked, past the limit: the 413 is read, then the rest of the body is dropped', async () => {
    const c = await open();
    c.socket.write(head('chunked'));
    const chunk = `${(64 * 1024).toString(16)}\r\n${'x'.repeat(64 * 1024)}\r\n`;
    for (let sent = 0; sent < 2 * LIMIT; sent += 64 * 1024) {
      if (!c.socket.write(chunk)) await new Promise((r) => c.socket.once('drain', r));
    }
    c.socket.write(`0\r\n\r\n${NEXT}`);
    const closed = await c.closed;
    expect(closed.reset).toBe(false);
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(c.received()).toMatch(/}HTTP\/1\.1 200 /);
  });

  test('declared far longer than is ever drained, is answered 413 and its connection closed', async () => {
    const c = await open();
    c.socket.write(head(LIMIT + DRAIN_BYTES + 1));
    c.socket.write('x'.repeat(1000));
    await seen(c.received, /^HTTP\/1\.1 413 [^]*\r\n\r\n\{[^]*\}/);
    expect(c.received()).toMatch(/\r\nconnection: close\r\n/i);
    await c.closed;
  });
});
