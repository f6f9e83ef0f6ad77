import type { FastifyRequest } from 'fastify';
import { acceptsOurs } from '../../src/http/content-negotiation';
import { link } from '../../src/http/hal';
import { ownPath } from '../../src/http/own-href';
import { pageLinks } from '../../src/http/paging';
import { MAX_WAIT_SECONDS, preferredWait } from '../../src/http/prefer';
import { headerValues } from '../../src/http/raw-headers';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { pollIntervalSeconds } from '../../src/tasks/task-waiting';

/** preferredWait reads only the Prefer header of the request. */
const withPrefer = (prefer?: string | string[]) => ({ headers: { prefer } }) as unknown as FastifyRequest;

describe('Accept', () => {
  test('HAL JSON goes to a client whose most specific range for it has q > 0, or that asks for JSON alone', () => {
    for (const accept of [
      'Application/HAL+JSON; charset=utf-8',
      '*/*',
      'application/*',
      'application/json',
      'text/html, application/*;q=0.2',
    ]) {
      expect(acceptsOurs(accept)).toBe(true);
    }
    // Named with q=0, HAL JSON is refused whatever a wider range says: the answer would be the refused type.
    for (const accept of ['application/hal+json;q=0, */*;q=0.1', 'application/*;q=0, application/json', 'text/csv']) {
      expect(acceptsOurs(accept)).toBe(false);
    }
    expect(acceptsOurs('application/hal+json;q=0, text/event-stream', ['text/event-stream'])).toBe(true);
    // A q that is no number (an empty one too) is ignored, as any parameter we do not understand.
    expect(acceptsOurs('application/hal+json;q=')).toBe(true);
  });
});

describe('one header from the raw list', () => {
  test('every value of the header, in the order sent, whatever the case of its name; absent is undefined', () => {
    const raw = ['Host', 'x', 'AUTHORIZATION', 'Bearer a', 'Accept', '*/*', 'authorization', 'Bearer b'];
    expect(headerValues(raw, 'authorization')).toEqual(['Bearer a', 'Bearer b']);
    expect(headerValues(raw, 'accept')).toEqual(['*/*']);
    expect(headerValues(raw, 'idempotency-key')).toBeUndefined();
    // A name that only starts like the header is another header.
    expect(headerValues(['Authorization-Extra', 'v'], 'authorization')).toBeUndefined();
  });
});

describe('Prefer: wait (RFC 7240)', () => {
  test('seconds, among other preferences, quoted or not, capped', () => {
    expect(preferredWait(withPrefer('wait=10'))).toBe(10);
    expect(preferredWait(withPrefer('respond-async, wait="5"'))).toBe(5);
    expect(preferredWait(withPrefer(['return=minimal', 'Wait = 3']))).toBe(3);
    expect(preferredWait(withPrefer('wait=3600'))).toBe(MAX_WAIT_SECONDS);
    expect(preferredWait(withPrefer('wait=99999999999999999999'))).toBe(MAX_WAIT_SECONDS);
    expect(preferredWait(withPrefer(`wait=${'9'.repeat(400)}`))).toBe(MAX_WAIT_SECONDS);
  });

  test('absent or not understood is no preference, never an error', () => {
    expect(preferredWait(withPrefer())).toBeUndefined();
    expect(preferredWait(withPrefer('wait=soon'))).toBeUndefined();
    expect(preferredWait(withPrefer('wait=-1'))).toBeUndefined();
    expect(preferredWait(withPrefer('handling=lenient'))).toBeUndefined();
  });
});

describe('Retry-After of a task that is not final', () => {
  const created = (ageMs: number, now: number) => ({ createdAt: new Date(now - ageMs).toISOString() }) as TaskSnapshot;
  test('1 s in its first 10 s, 2 s until a minute, 5 s after', () => {
    const now = Date.now();
    expect([0, 9999, 10000, 59999, 60000, 3_600_000].map((age) => pollIntervalSeconds(created(age, now), now))).toEqual(
      [1, 1, 2, 2, 5, 5],
    );
  });
});

describe('links', () => {
  test('hrefs never end in / except the root itself', () => {
    expect(link('/orders/')).toEqual({ href: '/orders' });
    expect(link('/orders//')).toEqual({ href: '/orders' });
    expect(link('/')).toEqual({ href: '/' });
  });

  test('a page links itself, next while more remain, prev when not at the start', () => {
    expect(pageLinks('/orders', 0, 10, 25)).toEqual({
      self: { href: '/orders?offset=0&limit=10' },
      next: { href: '/orders?offset=10&limit=10' },
    });
    expect(pageLinks('/orders', 20, 10, 25)).toEqual({
      self: { href: '/orders?offset=20&limit=10' },
      prev: { href: '/orders?offset=10&limit=10' },
    });
    expect(pageLinks('/tasks', 5, 10, 8, 'status=running&').prev).toEqual({
      href: '/tasks?status=running&offset=0&limit=10',
    });
    // Past the end, prev is the last page that has items, not another empty one.
    expect(pageLinks('/orders', 999, 20, 3).prev).toEqual({ href: '/orders?offset=0&limit=20' });
    expect(pageLinks('/orders', 40, 10, 25).prev).toEqual({ href: '/orders?offset=15&limit=10' });
  });
});

describe("an href of this service's", () => {
  const bases = ['http://localhost:3000', 'https://api.example.com/hookstream/'];
  test('relative, or absolute on one of the bases (origin compared as a URL), is its path under the API root', () => {
    expect(ownPath('/orders/1', bases)).toBe('/orders/1');
    expect(ownPath('http://LOCALHOST:3000/orders/1', bases)).toBe('/orders/1');
    expect(ownPath('https://api.example.com:443/hookstream/orders/1', bases)).toBe('/orders/1');
  });

  test('another host, scheme, port or path prefix, a protocol-relative href or credentials are not ours', () => {
    for (const href of [
      'http://evil.example/orders/1',
      '//evil.example/orders/1',
      'https://localhost:3000/orders/1',
      'http://localhost:3001/orders/1',
      'https://api.example.com/orders/1',
      'https://api.example.com/hookstreamx/orders/1',
      'http://user:pw@localhost:3000/orders/1',
      'http://localhost:3000/orders/1?x=1',
      'orders/1',
    ]) {
      expect(ownPath(href, bases)).toBeUndefined();
    }
  });
});
