import { PROBLEM_TYPES, problemType, type ProblemKind } from './problem-types';

/** RFC 9457 Problem Details, with the spec's `errors`, `logref` and `processed` extensions. */
export interface ProblemDetail {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  logref?: string;
  errors?: ProblemDetail[];
  processed?: unknown;
  [extension: string]: unknown;
}

/** A Problem Detail for one kind; `status` follows the kind unless given. */
export function problem(kind: ProblemKind, detail: string, extra: Partial<ProblemDetail> = {}): ProblemDetail {
  const { status, title } = PROBLEM_TYPES[kind];
  return { type: problemType(kind), title, status, detail, ...extra };
}

/** One `errors[]` entry: the field at `pointer` (a JSON pointer), and what is wrong with it. */
export function invalidField(pointer: string, what: string): ProblemDetail {
  return problem('invalid-field', `${pointer} ${what}`, { instance: pointer });
}

interface AjvLikeError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** One `errors[]` entry per offending field, `instance` a JSON pointer to it. */
/**
 * errors[] entries one Problem lists at most: ajv reports every error (allErrors), and an array of 20,000 wrong items
 * made a 3.5 MB answer, and a task.failed event larger than Kafka takes.
 */
export const MAX_FIELD_ERRORS = 100;

/** A property name as one JSON pointer token (RFC 6901): `a/b` is `a~1b`, not the path a, b. */
const pointerToken = (name: unknown) => `/${String(name).replaceAll('~', '~0').replaceAll('/', '~1')}`;

export function fieldErrors(errors: AjvLikeError[], prefix = ''): ProblemDetail[] {
  const entries = errors.slice(0, MAX_FIELD_ERRORS).map((e) => {
    const pointer = pointerOf(e, prefix);
    // Both name a member of the object ajv reports on, and the pointer names that member: its words would not fit.
    const detail =
      e.keyword === 'additionalProperties'
        ? 'is not a known field'
        : e.keyword === 'required'
          ? 'is required'
          : (e.message ?? 'is invalid');
    return problem('invalid-field', `${pointer} ${detail}`, { instance: pointer });
  });
  const made = entries.length;
  if (made === errors.length) return listedErrors(entries);
  return listedErrors([...entries, unlistedEntry(errors.length - made, pointerOf(errors[made], prefix))]);
}

function pointerOf(e: AjvLikeError, prefix: string): string {
  // ajv's instancePath is escaped already; the names it reports in params are not.
  const missing = e.keyword === 'required' ? pointerToken(e.params?.missingProperty) : '';
  const extra = e.keyword === 'additionalProperties' ? pointerToken(e.params?.additionalProperty) : '';
  return `${prefix}${e.instancePath ?? ''}${missing}${extra}` || '/';
}

/**
 * On an "and N more errors, not listed" entry: N, so a list holding it that is capped again counts them. Its
 * instance is the first of the errors it stands for.
 */
const UNLISTED = Symbol('unlisted');
type MaybeUnlisted = ProblemDetail & { [UNLISTED]?: number };

function unlistedEntry(count: number, at: string): ProblemDetail {
  const entry: MaybeUnlisted = problem('invalid-field', `and ${count} more errors, not listed`, { instance: at });
  entry[UNLISTED] = count;
  return entry;
}

/**
 * At most MAX_FIELD_ERRORS entries, the last saying how many more there are (also those an earlier cap of a part of
 * the list left out). Every Problem's errors[] passes here (problem-plugin.ts): one error per member of a large body
 * made an answer many times the size of the request.
 */
export function listedErrors(errors: ProblemDetail[]): ProblemDetail[] {
  const listed = errors.filter((e) => (e as MaybeUnlisted)[UNLISTED] === undefined);
  const total = errors.reduce((n, e) => n + ((e as MaybeUnlisted)[UNLISTED] ?? 1), 0);
  if (total <= MAX_FIELD_ERRORS) return errors;
  const entries = listed.slice(0, MAX_FIELD_ERRORS - 1);
  let kept = 0;
  const firstLeftOut = errors.find((e) => (e as MaybeUnlisted)[UNLISTED] !== undefined || ++kept > entries.length);
  return [...entries, unlistedEntry(total - entries.length, firstLeftOut?.instance ?? '/')];
}
