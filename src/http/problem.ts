import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { KafkaUnavailableError } from '../kafka/types';
import { PROBLEM_TYPES, problemType, type ProblemKind } from './problem-types';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

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

export interface ProblemErrorOptions {
  errors?: ProblemDetail[];
  processed?: unknown;
  status?: number;
  headers?: Record<string, string>;
  extensions?: Record<string, unknown>;
}

/** Thrown anywhere in a request; the problem plugin turns it into the response. */
export class ProblemError extends Error {
  constructor(readonly kind: ProblemKind, readonly detail: string, readonly options: ProblemErrorOptions = {}) {
    super(detail);
    this.name = 'ProblemError';
  }

  get status(): number {
    return this.options.status ?? PROBLEM_TYPES[this.kind].status;
  }
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

const FRAMEWORK_ERRORS: Record<string, ProblemKind> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed-body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed-body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad-request',
  FST_ERR_BAD_URL: 'bad-request',
};

const FRAMEWORK_DETAILS: Partial<Record<ProblemKind, string>> = {
  'malformed-body': 'The body is not valid JSON.',
  'unsupported-media-type': 'Send the body as application/json (or application/hal+json; application/merge-patch+json for PATCH).',
};

function toProblemError(err: FastifyError | Error): ProblemError | undefined {
  if (err instanceof ProblemError) return err;
  if (err instanceof KafkaUnavailableError) {
    return new ProblemError('kafka-unavailable', 'Kafka is not reachable right now; retry later.', { headers: { 'retry-after': '5' } });
  }
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext === 'body' ? '' : `/${fe.validationContext ?? 'request'}`;
    return new ProblemError('validation-failed', 'The request has invalid values; see errors.', { errors: fieldErrors(fe.validation, where) });
  }
  const kind = fe.code ? FRAMEWORK_ERRORS[fe.code] : undefined;
  if (kind) return new ProblemError(kind, FRAMEWORK_DETAILS[kind] ?? fe.message);
  if (err instanceof SyntaxError && fe.statusCode === 400) return new ProblemError('malformed-body', 'The body is not valid JSON.');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ProblemError('bad-request', fe.message, { status: fe.statusCode });
  }
  return undefined;
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, err: ProblemError): FastifyReply {
  const body = problem(err.kind, err.detail, {
    status: err.status,
    instance: request.url.split('?')[0],
    logref: request.id,
    ...(err.options.errors ? { errors: err.options.errors } : {}),
    ...(err.options.processed !== undefined ? { processed: err.options.processed } : {}),
    ...err.options.extensions,
  });
  for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
  return reply.code(err.status).type(PROBLEM_MEDIA_TYPE).send(body);
}

/** Every 4xx/5xx is a Problem Detail; nothing internal ever leaves the process. */
export const problemPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const known = toProblemError(err);
    if (known) {
      if (known.status >= 500) request.log.warn({ err, kind: known.kind }, 'request failed');
      return sendProblem(request, reply, known);
    }
    request.log.error({ err }, 'unexpected error');
    return sendProblem(request, reply, new ProblemError('internal-error', `Something went wrong on our side; quote logref ${request.id} when reporting it.`));
  });
}, { name: 'hookstream-problem' });
