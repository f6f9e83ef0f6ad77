import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { fieldErrors, type ProblemDetail } from './problem-detail';
import { ProblemError } from './problem-error';

/*
 * Bodies are validated with our own ajv: no type coercion ("42" is not a
 * number) and no silent removal of unknown fields, unlike Fastify's defaults.
 */
const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, useDefaults: false });
addFormats(ajv);

export type Validator = ValidateFunction;

export function compile(schema: object): Validator {
  return ajv.compile(withSafeIntegers(schema) as object);
}

/** Keywords whose values are data, not schemas: never rewritten. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * JSON.parse turns an integer beyond 2^53 into the nearest double: `99999999999999999999` would be stored, and
 * summed, as 1e20, a value the client never sent. So an integer without bounds of its own is kept to the range a
 * double holds exactly, and such a value is a 400 at its pointer instead of a silent change. A copy: the caller's
 * schema (often a shared constant) is left as it is.
 */
function withSafeIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withSafeIntegers);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = DATA_KEYWORDS.has(k) ? v : withSafeIntegers(v);
  const t = out.type;
  if (t === 'integer' || (Array.isArray(t) && t.includes('integer'))) {
    if (out.maximum === undefined && out.exclusiveMaximum === undefined) out.maximum = Number.MAX_SAFE_INTEGER;
    if (out.minimum === undefined && out.exclusiveMinimum === undefined) out.minimum = Number.MIN_SAFE_INTEGER;
  }
  return out;
}

/** The field errors of one value, as Problem Details with JSON pointers below `prefix`. */
export function validationErrors(validate: Validator, value: unknown, prefix = ''): ProblemDetail[] {
  if (validate(value)) return [];
  return fieldErrors((validate.errors ?? []) as ErrorObject[], prefix);
}

export function requireObjectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ProblemError('validation-failed', 'The body must be a JSON object.', {
      errors: [{ ...fieldErrors([{ instancePath: '', message: 'must be an object' }])[0] }],
    });
  }
  return body as Record<string, unknown>;
}
