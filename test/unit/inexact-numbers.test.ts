import { inexactNumberIn } from '../../src/http/inexact-numbers';
import { problemType } from '../../src/problems/problem-types';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

describe('inexactNumberIn', () => {
  test.each([
    ['{"n":9007199254740993}', '9007199254740993'],
    ['{"n":-9007199254740993}', '-9007199254740993'],
    ['[1, 123456789012345678901234567890]', '123456789012345678901234567890'],
    ['{"n":1e-400}', '1e-400'],
    ['{"n":-2.5E-999}', '-2.5E-999'],
    ['{"n":1e309}', '1e309'],
    [`{"n":0.${'0'.repeat(400)}1}`, `0.${'0'.repeat(400)}1`],
    // At 2^53 and beyond, however written: a float holds no fraction there, nor every integer.
    ['{"n":9007199254740993.0}', '9007199254740993.0'],
    ['{"n":9.007199254740993e15}', '9.007199254740993e15'],
    ['{"n":12345678901234567890e0}', '12345678901234567890e0'],
    ['{"n":12345678901234567.5}', '12345678901234567.5'],
  ])('case %#: a number a double does not hold as written is refused', (text, literal) => {
    expect(inexactNumberIn(text)).toBe(literal);
  });

  test.each([
    '{"n":9007199254740991}',
    '{"n":-9007199254740991}',
    '{"n":0.1, "m":1e300, "k":1e-300, "z":0e-400, "w":0.0000000000000000}',
    // Integers a float holds exactly, however large, and floats written as they read back.
    '{"a":9007199254740992, "b":10000000000000000, "c":1e21, "d":-1.5e300, "e":2e-310, "f":-0}',
    // Below 2^53 a fraction is a float's to approximate, as every JSON reader does.
    '{"pi":3.14159265358979323846, "small":123456789012345.678}',
    // Digits in strings are text, escaped quotes included.
    '{"id":"9007199254740993", "s":"say \\"1e-400\\" 123456789012345678"}',
  ])('%s is held as sent', (text) => {
    expect(inexactNumberIn(text)).toBeUndefined();
  });
});

describe('a body with a number it would not hold as sent', () => {
  let api: InMemoryApi;
  beforeAll(async () => {
    api = await inMemoryApi();
  });
  afterAll(() => api.app.close());

  test('is a 400 naming the number, and nothing is written', async () => {
    const before = (await call(api.app, '/orders?fields=count')).body.count;
    const res = await call(api.app, '/orders', {
      raw: '{"orderNumber":9007199254740993,"itemCount":1,"status":"open"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('malformed-body'));
    expect(res.body.detail).toContain('9007199254740993');
    expect((await call(api.app, '/orders?fields=count')).body.count).toBe(before);
    const safe = await call(api.app, '/orders', { body: { orderNumber: 9007199254740991, itemCount: 1, status: 'o' } });
    expect(safe.status).toBe(201);
    expect(safe.body.orderNumber).toBe(9007199254740991);
  });
});
