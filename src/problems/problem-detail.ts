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

interface AjvLikeError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** One `errors[]` entry per offending field, `instance` a JSON pointer to it. */
export function fieldErrors(errors: AjvLikeError[], prefix = ''): ProblemDetail[] {
  return errors.map((e) => {
    const missing = e.keyword === 'required' ? `/${String(e.params?.missingProperty)}` : '';
    const extra = e.keyword === 'additionalProperties' ? `/${String(e.params?.additionalProperty)}` : '';
    const pointer = `${prefix}${e.instancePath ?? ''}${missing}${extra}` || '/';
    const detail = e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
    return problem('invalid-field', `${pointer} ${detail}`, { instance: pointer });
  });
}
