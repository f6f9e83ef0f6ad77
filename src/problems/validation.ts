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
  return ajv.compile(schema);
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
