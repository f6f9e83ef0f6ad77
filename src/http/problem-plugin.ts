import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { cutError } from '../problems/error-text';
import { fieldErrors, listedErrors, problem } from '../problems/problem-detail';
import { RepeatedFailures } from './repeated-failures';
import { problemKindOf, ProblemError, type KindedError } from '../problems/problem-error';
import { PROBLEM_TYPES, type ProblemKind } from '../problems/problem-types';
import { ACCEPT_PATCH } from './content-negotiation';
import { instanceUri } from './instance-uri';
import { isKafkaFailure } from '../kafka/kafka-failure';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';
/** As Fastify sends a Problem: answers written straight to a socket say the same. */
export const PROBLEM_CONTENT_TYPE = `${PROBLEM_MEDIA_TYPE}; charset=utf-8`;

const FRAMEWORK_ERRORS: Record<string, ProblemKind> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed-body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed-body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad-request',
  FST_ERR_BAD_URL: 'bad-request',
};

/** What a client is told of a problem raised below the HTTP layer or by Fastify, whose own message stays in the log. */
const PUBLIC_DETAILS: Partial<Record<ProblemKind, string>> = {
  'malformed-body': 'The body is not valid JSON.',
  'unsupported-media-type':
    'Send the body as application/json (or application/hal+json; application/merge-patch+json for PATCH).',
  'kafka-unavailable': 'Kafka is not reachable right now; retry later.',
};

const PROBLEM_HEADERS: Partial<Record<ProblemKind, Record<string, string>>> = {
  'kafka-unavailable': { 'retry-after': '5' },
};

function publicDetailOf(err: Error): string | undefined {
  const detail = (err as Partial<KindedError>).publicDetail;
  return typeof detail === 'string' ? detail : undefined;
}

function carriedProblem(kind: ProblemKind, detail: string | undefined): ProblemError {
  return new ProblemError(kind, detail ?? PUBLIC_DETAILS[kind] ?? PROBLEM_TYPES[kind].title, {
    headers: PROBLEM_HEADERS[kind],
  });
}

const kafkaUnavailable = () => carriedProblem('kafka-unavailable', undefined);

function toProblemError(err: FastifyError | Error): ProblemError | undefined {
  if (err instanceof ProblemError) return err;
  const carried = problemKindOf(err);
  if (carried) return carriedProblem(carried, publicDetailOf(err));
  // A Kafka client's failure that no layer below told as Kafka unavailable (each should): still the client's 503,
  // which it retries, not a 500 that says the server is broken. The log has it with its stack (a 5xx is reported).
  if (isKafkaFailure(err)) return kafkaUnavailable();
  const fe = err as FastifyError;
  if (fe.validation) {
    const where = fe.validationContext === 'body' ? '' : `/${fe.validationContext ?? 'request'}`;
    return new ProblemError('validation-failed', 'The request has invalid values; see errors.', {
      errors: fieldErrors(fe.validation, where),
    });
  }
  const kind = fe.code ? FRAMEWORK_ERRORS[fe.code] : undefined;
  if (kind) return new ProblemError(kind, PUBLIC_DETAILS[kind] ?? fe.message);
  if (err instanceof SyntaxError && fe.statusCode === 400)
    return new ProblemError('malformed-body', 'The body is not valid JSON.');
  // A file of the docs page refused (a path with `..`, a dotfile): told as what is not there, not a 403 typed 400.
  if (fe.statusCode === 403 || fe.statusCode === 404) return new ProblemError('not-found', 'Nothing is served here.');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ProblemError('bad-request', fe.message, { status: fe.statusCode });
  }
  return undefined;
}

/**
 * A bulk failure lists one entry per failed element (the spec's bulk rule 6), its field errors capped already
 * (bulk.ts); any other Problem lists at most MAX_FIELD_ERRORS field errors.
 */
const listsEveryElement = new Set<ProblemKind>(['bulk-failed', 'bulk-partially-failed']);
const answerErrors = (err: ProblemError) =>
  (listsEveryElement.has(err.kind) ? (err.options.errors ?? []) : listedErrors(err.options.errors ?? [])).map(cutError);

export function sendProblem(request: FastifyRequest, reply: FastifyReply, err: ProblemError): FastifyReply {
  const body = problem(err.kind, err.detail, {
    status: err.status,
    instance: instanceUri(request.url.split('?')[0]),
    logref: request.id,
    ...(err.options.errors ? { errors: answerErrors(err) } : {}),
    ...(err.options.processed !== undefined ? { processed: err.options.processed } : {}),
    ...err.options.extensions,
  });
  for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
  // RFC 5789 §2.2: a patch document the server does not take is 415, saying what it takes.
  if (err.status === 415 && request.method === 'PATCH') reply.header('accept-patch', ACCEPT_PATCH);
  return reply.code(err.status).type(PROBLEM_MEDIA_TYPE).send(body);
}

/** Every 4xx/5xx is a Problem Detail; nothing internal ever leaves the process. */
export const problemPlugin = fp(
  async (app: FastifyInstance) => {
    const failures = new RepeatedFailures(app.log);
    app.addHook('onClose', async () => failures.flush());
    app.setErrorHandler((err: FastifyError, request, reply) => {
      // Said with the limit, as the answer to an Expect: 100-continue over it says (body-limit.ts).
      const known =
        err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? new ProblemError(
              'payload-too-large',
              `The body is larger than the ${request.routeOptions.bodyLimit} bytes taken.`,
            )
          : toProblemError(err);
      if (known) {
        if (known.status >= 500) failures.report(request.log, err, known.kind);
        return sendProblem(request, reply, known);
      }
      request.log.error({ err }, 'unexpected error');
      return sendProblem(
        request,
        reply,
        new ProblemError(
          'internal-error',
          `Something went wrong on our side; quote logref ${request.id} when reporting it.`,
        ),
      );
    });
  },
  { name: 'hookstream-problem' },
);
