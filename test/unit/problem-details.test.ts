import { fieldErrors, invalidField, listedErrors, MAX_FIELD_ERRORS, problem } from '../../src/problems/problem-detail';
import { problemKindOf, ProblemError } from '../../src/problems/problem-error';
import { problemType } from '../../src/problems/problem-types';
import { compile, requireObjectBody, validationErrors } from '../../src/problems/validation';
import { KafkaUnavailableError } from '../../src/kafka/types';

describe('Problem Details', () => {
  test('a problem of a kind carries its type URI, title and status; extras may override the status', () => {
    expect(problem('not-found', 'gone')).toEqual({
      type: problemType('not-found'),
      title: 'Not found',
      status: 404,
      detail: 'gone',
    });
    expect(problem('not-found', 'x', { status: 410, instance: '/a' })).toMatchObject({ status: 410, instance: '/a' });
  });

  test("a ProblemError's status follows its kind unless given", () => {
    expect(new ProblemError('unauthorized', 'no key').status).toBe(401);
    expect(new ProblemError('bulk-failed', 'all missing', { status: 404 }).status).toBe(404);
  });

  test('an error from below the HTTP layer names its kind; an unknown kind or a plain error names none', () => {
    expect(problemKindOf(new KafkaUnavailableError('down'))).toBe('kafka-unavailable');
    expect(problemKindOf(Object.assign(new Error('x'), { problemKind: 'no-such-kind' }))).toBeUndefined();
    expect(problemKindOf(new Error('plain'))).toBeUndefined();
    expect(problemKindOf({ problemKind: 'not-found' })).toBeUndefined();
  });
});

describe('validation errors as JSON pointers', () => {
  const validate = compile({
    type: 'object',
    properties: { itemCount: { type: 'integer', minimum: 1 }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['itemCount'],
    additionalProperties: false,
  });

  test('one entry per offending field: a wrong value, a missing field, an unknown one, an array element', () => {
    const errors = validationErrors(validate, { tags: ['a', 2], colour: 'red' });
    expect(errors.map((e) => e.instance).sort()).toEqual(['/colour', '/itemCount', '/tags/1']);
    expect(errors.find((e) => e.instance === '/colour')?.detail).toBe('/colour is not a known field');
    // Pointed at the missing field, the detail says what is wrong with it: not ajv's words about its parent.
    expect(errors.find((e) => e.instance === '/itemCount')?.detail).toBe('/itemCount is required');
    for (const e of errors) expect(e).toMatchObject({ type: problemType('invalid-field'), status: 400 });
  });

  test('an integer beyond what a double holds exactly is invalid, not silently rounded', () => {
    expect(validationErrors(validate, JSON.parse('{"itemCount": 99999999999999999999}'))).toEqual([
      expect.objectContaining({ instance: '/itemCount' }),
    ]);
    expect(validationErrors(validate, { itemCount: Number.MAX_SAFE_INTEGER })).toEqual([]);
  });

  test('no coercion: "42" is not an integer', () => {
    expect(validationErrors(validate, { itemCount: '42' }).map((e) => e.instance)).toEqual(['/itemCount']);
    expect(validationErrors(validate, { itemCount: 42 })).toEqual([]);
  });

  test('an unknown field whose name holds / or ~ is pointed at as one token (RFC 6901)', () => {
    const errors = validationErrors(validate, { itemCount: 1, 'a/b': 1, 'c~d': 2 });
    expect(errors.map((e) => e.instance).sort()).toEqual(['/a~1b', '/c~0d']);
  });

  test('pointers go below a prefix; an error at the root is /', () => {
    expect(validationErrors(validate, { itemCount: 0 }, '/input').map((e) => e.instance)).toEqual(['/input/itemCount']);
    expect(fieldErrors([{ instancePath: '', message: 'must be an object' }])[0].instance).toBe('/');
  });

  test('a body that is not an object is a validation-failed ProblemError', () => {
    for (const body of [null, [], 'text', 3]) {
      expect(() => requireObjectBody(body)).toThrow(ProblemError);
    }
    expect(requireObjectBody({ a: 1 })).toEqual({ a: 1 });
  });
});

describe('errors[] lists at most MAX_FIELD_ERRORS', () => {
  const schemaErrors = (n: number) => Array.from({ length: n }, (_, i) => ({ instancePath: `/items/${i}` }));

  test('a list capped, then joined with other errors and capped again, counts every error it leaves out', () => {
    // A resource's schema errors (capped) and its relation errors are one answer, capped once more.
    const joined = [...fieldErrors(schemaErrors(5000)), invalidField('/author', 'names no user')];
    const listed = listedErrors(joined);
    expect(listed).toHaveLength(MAX_FIELD_ERRORS);
    expect(listed.at(-1)?.detail).toBe(`and ${5001 - (MAX_FIELD_ERRORS - 1)} more errors, not listed`);
    expect(listed.slice(0, -1).every((e) => !e.detail.startsWith('and '))).toBe(true);
    // It points at the first error it stands for, never again at one listed.
    expect(listed.at(-1)?.instance).toBe(`/items/${MAX_FIELD_ERRORS - 1}`);
    expect(listed.slice(0, -1).map((e) => e.instance)).not.toContain(listed.at(-1)?.instance);
  });

  test('the entry for the errors not listed points at the first of them, whichever part of the list it is in', () => {
    const few = fieldErrors(schemaErrors(3));
    const many = Array.from({ length: 150 }, (_, i) => invalidField(`/relation/${i}`, 'names nothing'));
    expect(listedErrors([...few, ...many]).at(-1)?.instance).toBe(`/relation/${MAX_FIELD_ERRORS - 4}`);
    expect(fieldErrors(schemaErrors(MAX_FIELD_ERRORS + 5)).at(-1)?.instance).toBe(`/items/${MAX_FIELD_ERRORS - 1}`);
  });

  test('a list within the cap is answered as it is', () => {
    const few = [...fieldErrors(schemaErrors(3)), invalidField('/author', 'names no user')];
    expect(listedErrors(few)).toEqual(few);
  });
});
