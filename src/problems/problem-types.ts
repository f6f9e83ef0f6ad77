/**
 * The registry of problem kinds. A problem's identity is its `type` URI;
 * titles are stable per type. docs/problems.md lists the same entries and a
 * test keeps the two in sync.
 */
export const PROBLEM_BASE_URI = 'https://hookstream.dev/problems/';

/**
 * A kind's default status and stable title; `statuses` lists every status it is answered with, when there are more
 * (bulk-partially-failed is a 404 when every failed element is a missing resource), the default first.
 */
export interface ProblemTypeEntry {
  status: number;
  title: string;
  statuses?: readonly number[];
}

export const PROBLEM_TYPES = {
  'bad-request': { status: 400, title: 'Bad request' },
  'malformed-body': { status: 400, title: 'Malformed request body' },
  'validation-failed': { status: 400, title: 'Validation failed' },
  'invalid-field': { status: 400, title: 'Invalid field' },
  'bulk-failed': { status: 400, title: 'Bulk operation failed; nothing was changed' },
  'bulk-partially-failed': { status: 400, title: 'Bulk operation partially failed', statuses: [400, 404] },
  'idempotency-key-invalid': { status: 400, title: 'Invalid Idempotency-Key' },
  unauthorized: { status: 401, title: 'Authentication required' },
  'subscription-rejected': { status: 403, title: 'Subscription rejected' },
  'uuid-mismatch': { status: 403, title: 'UUID does not match the resource' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  'not-acceptable': { status: 406, title: 'Not acceptable' },
  'request-timeout': { status: 408, title: 'Request timeout' },
  'task-already-finished': { status: 409, title: 'Task already finished' },
  'task-not-finished': { status: 409, title: 'Task not finished' },
  'idempotency-key-in-flight': { status: 409, title: 'A request with this Idempotency-Key is in progress' },
  'precondition-failed': { status: 412, title: 'Precondition failed' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'expectation-failed': { status: 417, title: 'Expectation failed' },
  'idempotency-key-reused': { status: 422, title: 'Idempotency-Key reused for another request' },
  'headers-too-large': { status: 431, title: 'Request header fields too large' },
  'http-version-not-supported': { status: 505, title: 'HTTP version not supported' },
  'internal-error': { status: 500, title: 'Internal server error' },
  'kafka-unavailable': { status: 503, title: 'Kafka unavailable' },
  'not-ready': { status: 503, title: 'Not ready' },
  'callback-url-unverified': { status: 503, title: 'Callback URL could not be checked' },
  'task-failed': { status: 500, title: 'Task failed' },
  'task-timed-out': { status: 504, title: 'Task timed out' },
  'task-request-invalid': { status: 400, title: 'Invalid task request' },
  'task-events-deleted': { status: 410, title: 'Task events deleted' },
} as const satisfies Record<string, ProblemTypeEntry>;

export type ProblemKind = keyof typeof PROBLEM_TYPES;

export function problemType(kind: ProblemKind): string {
  return `${PROBLEM_BASE_URI}${kind}`;
}
