import type { FastifyRequest } from 'fastify';

/** RFC 7240 `wait` is capped: a request never holds its connection longer than this. */
export const MAX_WAIT_SECONDS = 60;

/**
 * The `wait` preference of RFC 7240 (`Prefer: wait=10`), in seconds, capped at
 * MAX_WAIT_SECONDS; undefined when absent or not a number. Preferences are
 * hints: one the server does not understand is ignored, never an error.
 */
export function preferredWait(request: FastifyRequest): number | undefined {
  const header = request.headers.prefer;
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  for (const value of values) {
    for (const preference of value.split(',')) {
      const [token] = preference.split(';');
      // Any length of digits: a wait longer than a number holds is still a wait, capped like any other.
      const m = /^\s*wait\s*=\s*"?(\d+)"?\s*$/i.exec(token);
      if (m) return Math.min(Number(m[1]), MAX_WAIT_SECONDS);
    }
  }
  return undefined;
}

/** The request header, as route schemas declare it. */
export const PREFER_HEADER = {
  type: 'string',
  description:
    'RFC 7240. `wait=N`: hold the answer until the task is final, at most N seconds ' +
    `(capped at ${MAX_WAIT_SECONDS}).`,
  examples: ['wait=30'],
};

/** The answer's header when a wait preference was applied. */
export const PREFERENCE_APPLIED_HEADER = { type: 'string', description: 'the wait that was applied, `wait=N`' };
