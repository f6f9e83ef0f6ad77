import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tenantOf } from './auth';
import type { Describe, IdempotencyKeys } from '../idempotency/idempotency-keys';
import type { StoredAnswer } from '../idempotency/idempotency-records';
import type { KeyedCreation } from '../kafka/types';
import { ProblemError } from '../problems/problem-error';
import { headerValues } from './raw-headers';

/**
 * The key of `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): a
 * Structured Field string (`"8e03978e-…"`), or, leniently, a bare token.
 * Undefined when the header is absent; a 400 Problem when it is malformed.
 */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const values = headerValues(request.raw.rawHeaders, 'idempotency-key');
  if (!values) return undefined;
  const invalid = (why: string) => new ProblemError('idempotency-key-invalid', `The Idempotency-Key header ${why}.`);
  if (values.length > 1) throw invalid('appears more than once');
  const raw = values[0].trim();
  const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(raw);
  const key = quoted ? quoted[1].replace(/\\(["\\])/g, '$1') : raw;
  // Bare, a comma makes a list (RFC 9110 §5.3: the same as the header twice) and a semicolon parameters (RFC 8941).
  if (!quoted && !/^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/.test(raw)) {
    throw invalid(
      'must be a quoted string ("…") or a bare token of visible ASCII characters, ' +
        'without quotes, backslashes, commas or semicolons',
    );
  }
  if (key.length < 1 || key.length > 255) throw invalid('must hold 1 to 255 characters');
  return key;
}

/** JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What makes two requests "the same" for a key: method, path, query and body. */
export function requestFingerprint(request: FastifyRequest): string {
  const [routed, query = ''] = request.url.split('?');
  // `/tasks/` reaches the route `/tasks` does (ignoreTrailingSlash): the same request.
  const path = routed.length > 1 ? routed.replace(/\/+$/, '') : routed;
  const params = query.split('&').filter(Boolean).sort().join('&');
  const described = `${request.method} ${path}?${params}\n${canonical(request.body)}`;
  return createHash('sha256').update(described).digest('base64url');
}

export interface IdempotentCreation<T> {
  /** what the creation answers: ids chosen in advance, or read from its write's records */
  describe: Describe;
  /** answers a repeat of a request that created something, from the current state; `answeredAt` as KeyDecision's */
  replay(answer: StoredAnswer, answeredAt: number): Promise<T> | T;
  /** the creation itself; its first write carries the key: the stores pass `keyed` on as PublishOptions.idempotency */
  create(keyed?: KeyedCreation): Promise<T>;
}

/**
 * Runs a creating POST under its Idempotency-Key, when it has one: a repeat
 * (same tenant, key and request, within 24 h) is answered like the first and
 * creates nothing; the same key with another request is 422; a repeat while
 * the first is still writing is 409 (once its write landed, a repeat gets its answer).
 */
export async function idempotently<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  keys: IdempotencyKeys | undefined,
  creation: IdempotentCreation<T>,
): Promise<T> {
  const key = idempotencyKeyOf(request);
  if (key === undefined || !keys) return creation.create();
  const decision = await keys.begin(tenantOf(request), key, requestFingerprint(request));
  switch (decision.kind) {
    case 'replay':
      reply.header('idempotent-replayed', 'true');
      return creation.replay(decision.answer, decision.answeredAt);
    case 'reused':
      throw new ProblemError(
        'idempotency-key-reused',
        'This Idempotency-Key was used for another request (another body, method or path). ' +
          'Use a new key for a new request.',
      );
    case 'in-flight':
      throw new ProblemError(
        'idempotency-key-in-flight',
        'A request with this Idempotency-Key is still writing what it creates; retry later to get its answer.',
        { headers: { 'retry-after': '1' } },
      );
    default:
      return decision.run(creation.describe, (keyed) => creation.create(keyed));
  }
}

/** The request header, as the route schemas of creating POSTs declare it (the checks above stay the handler's). */
export const IDEMPOTENCY_KEY_HEADER = {
  type: 'string',
  description:
    'draft-ietf-httpapi-idempotency-key-header: a quoted string of 1 to 255 characters (or a bare token). ' +
    'The same tenant repeating the same request with the same key within 24 h gets the first answer again, ' +
    'with Idempotent-Replayed: true; the same key with another request is 422.',
  examples: ['"8e03978e-40d5-43e8-bc93-6894a57f9324"'],
};

/** The answer's header on a repeat. */
export const IDEMPOTENT_REPLAYED_HEADER = { type: 'string', enum: ['true'], description: 'this answer is a repeat' };
