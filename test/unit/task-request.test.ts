import { exampleTaskTypes } from '../../src/examples';
import { MAX_FIELD_ERRORS } from '../../src/problems/problem-detail';
import { TaskRegistry } from '../../src/tasks/task-registry';
import { DEFAULT_KAFKA_TENANT, parseTaskRequest, taskIdOfRequest } from '../../src/tasks/task-request';

/** A request produced to Kafka by a client of its own, as the runner reads it. */
const registry = new TaskRegistry(exampleTaskTypes);
const parse = (value: unknown) => parseTaskRequest(JSON.stringify(value), registry);
const countdown = { type: 'countdown', input: { steps: 1, stepMs: 0 } };

test('a tenant given but not valid is refused, never replaced by the default one', () => {
  const bad = parse({ ...countdown, tenant: 'acme corp' });
  expect(bad).toMatchObject({ ok: false, tenant: DEFAULT_KAFKA_TENANT });
  if (bad.ok) throw new Error('accepted');
  expect(bad.errors.map((e) => e.instance)).toEqual(['/tenant']);
  expect(parse({ ...countdown })).toMatchObject({ ok: true, request: { tenant: DEFAULT_KAFKA_TENANT } });
  expect(parse({ ...countdown, tenant: 'acme' })).toMatchObject({ ok: true, request: { tenant: 'acme' } });
});

test("a rejected request's type is kept only while it could be a name: its events carry it", () => {
  const long = parse({ type: 't'.repeat(600_000), input: {} });
  expect(long).toMatchObject({ ok: false, type: 'unknown' });
  expect(parse({ type: 'nope', input: {} })).toMatchObject({ ok: false, type: 'nope' });
});

test('an input with thousands of errors lists at most MAX_FIELD_ERRORS, the last saying how many more', () => {
  const many = parse({ type: 'order-report', input: { statuses: Array(20_000).fill(1) } });
  if (many.ok) throw new Error('accepted');
  expect(many.errors).toHaveLength(MAX_FIELD_ERRORS);
  expect(many.errors.map((e) => e.instance)).toContain('/input/statuses/0');
  expect(many.errors.at(-1)?.detail).toMatch(/^and \d+ more errors, not listed$/);
});

test('a request from a Kafka client is checked by its type beyond the schema, as over HTTP', () => {
  const never = parse({ type: 'countdown', input: { steps: 2, stepMs: 0, failAt: 3 } });
  if (never.ok) throw new Error('accepted');
  expect(never.errors.map((e) => e.instance)).toEqual(['/input/failAt']);
  // One the api accepted (a 202 was answered, maybe by an api without the check) is run, not failed.
  const promised = parse({ type: 'countdown', input: { steps: 2, stepMs: 0, failAt: 3 }, accepted: true });
  expect(promised).toMatchObject({ ok: true });
});

test('a type check that throws refuses the input at /input instead of failing the caller', () => {
  const fragile = {
    name: 'fragile',
    description: 'its check has a bug',
    inputSchema: { type: 'object' },
    checkInput: (): never => {
      throw new Error('bug');
    },
    run: async () => 1,
  };
  const errors = new TaskRegistry([fragile]).inputErrors('fragile', {});
  expect(errors.map((e) => [e.instance, e.detail])).toEqual([
    ['/input', '/input could not be checked by fragile: bug'],
  ]);
});

test('fields POST /tasks does not know, envelope fields of the wrong type and lone surrogates are refused', () => {
  const refused = (value: string) => {
    const parsed = parseTaskRequest(value, registry);
    if (parsed.ok) throw new Error(`accepted ${value}`);
    return parsed.errors.map((e) => e.instance);
  };
  expect(refused(JSON.stringify({ ...countdown, callbackUrl: 'http://127.0.0.1/x' }))).toEqual(['/callbackUrl']);
  expect(refused('{"type":"countdown","input":{"steps":1,"stepMs":0},"__proto__":{"x":1}}')).toEqual(['/__proto__']);
  expect(refused(JSON.stringify({ ...countdown, submittedAt: 5, accepted: 'yes' }))).toEqual([
    '/submittedAt',
    '/accepted',
  ]);
  expect(refused('{"type":"order-report","input":{"statuses":["ok","\\udc00"]}}')).toEqual(['/input/statuses/1']);
  // A type that is no text is not copied into the task's events.
  expect(parseTaskRequest('{"type":"\\ud800","input":{}}', registry)).toMatchObject({ ok: false, type: 'unknown' });
});

test("a request marked as the api's is not checked against what only the api checks; its mark is kept, valid or not", () => {
  const value = JSON.stringify({ type: 'countdown', input: { steps: 2, stepMs: 0, failAt: 3 }, accepted: true });
  expect(parseTaskRequest(value, registry)).toMatchObject({ ok: true, request: { accepted: true } });
  const unknownType = JSON.stringify({ type: 'retired', input: {}, accepted: true });
  expect(parseTaskRequest(unknownType, registry)).toMatchObject({ ok: false, accepted: true });
});

test("a task id is the key of a client's choosing, or the request's coordinates, never one the other could give", () => {
  expect(taskIdOfRequest('my-task_1', 2, '7')).toEqual({ taskId: 'my-task_1', keyed: true });
  expect(taskIdOfRequest(null, 2, '7')).toEqual({ taskId: 'request-2-7', keyed: false });
  expect(taskIdOfRequest('not valid!', 2, '7')).toEqual({ taskId: 'request-2-7', keyed: false });
  // Reserved: as a key, it could name the keyless request that lands at partition 1, offset 9.
  expect(taskIdOfRequest('request-1-9', 2, '7')).toEqual({ taskId: 'request-2-7', keyed: false });
  expect(taskIdOfRequest('request-1-9x', 2, '7')).toEqual({ taskId: 'request-1-9x', keyed: true });
});

test('a key in UUID form names its task in lower case, as a path does; any other key keeps its case', () => {
  const upper = '0193A1B2-C3D4-4E5F-8A9B-0C1D2E3F4A5B';
  expect(taskIdOfRequest(upper, 2, '7')).toEqual({ taskId: upper.toLowerCase(), keyed: true });
  expect(taskIdOfRequest('My-Task_1', 2, '7')).toEqual({ taskId: 'My-Task_1', keyed: true });
});
