import { MAX_ERROR_TEXT_BYTES } from '../../src/problems/error-text';
import { problemType } from '../../src/problems/problem-types';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * An error quotes the request's names. A member name of half a megabyte (the default 1 MB body limit allows it) made
 * a 400 of twice that or more: the name in both the detail and the pointer, each `~` twice over as `~0`. The in-memory
 * api takes 64 KB bodies: names of 60,000 characters stand in.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

const order = { orderNumber: 9, itemCount: 1, status: 'open' };
const longName = '~'.repeat(60_000);
const bytesAsJson = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

test('an unknown member with a long name: a 400 of a few kilobytes that still points at it', async () => {
  const res = await call(api.app, '/orders', { body: { ...order, [longName]: 1 } });
  expect(res.status).toBe(400);
  expect(res.body.type).toBe(problemType('validation-failed'));
  expect(Buffer.byteLength(res.text)).toBeLessThan(4 * MAX_ERROR_TEXT_BYTES);
  const [error] = res.body.errors;
  expect(error.instance.startsWith('/~0~0')).toBe(true);
  expect(error.instance.endsWith('…')).toBe(true);
  expect(error.detail.endsWith('…')).toBe(true);
  expect(bytesAsJson(error.detail)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
});

test("a bulk element's errors are cut too, and every element is still listed", async () => {
  const elements = [order, { ...order, [longName.slice(0, 20_000)]: 1 }, { ...order, itemCount: 0 }];
  const res = await call(api.app, '/orders', { body: { order: elements } });
  expect(res.status).toBe(400);
  expect(res.body.type).toBe(problemType('bulk-failed'));
  expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/orders/1', '/orders/2']);
  expect(Buffer.byteLength(res.text)).toBeLessThan(6 * MAX_ERROR_TEXT_BYTES);
  const [cut] = res.body.errors[0].errors;
  expect(cut.instance.endsWith('…')).toBe(true);
});
