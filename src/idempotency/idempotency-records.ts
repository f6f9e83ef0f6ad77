/** What the compacted idempotency-keys topic holds: claims, releases and answers of keyed requests. */
import type { ViewSpec } from '../kafka/types';
import type { ProblemDetail } from '../problems/problem-detail';

/** What a keyed request answered: enough to answer a repeat the same way, from the current state. */
export interface StoredAnswer {
  status: number;
  /** what the request created, in order (task ids, subscription ids, resource ids) */
  ids: string[];
  /** a request that created some things and failed others (a non-atomic bulk) */
  errors?: ProblemDetail[];
  /** the created task's `createdAt`: a repeat answers that task, not one made under its id since it was forgotten */
  createdAt?: string;
}

/** "A request with this key is being handled": the first claim since the key was free wins. */
export interface ClaimRecord {
  kind: 'claim';
  scope: string;
  claimId: string;
  fingerprint: string;
  at: number;
  /**
   * How long the claim holds its key (ms): the writer's 2 × KAFKA_TIMEOUT_MS + 5 s. Every instance times the claim by
   * it, not by its own setting: one with a shorter KAFKA_TIMEOUT_MS took a claim still being written for expired,
   * and both created. Absent in claims written before it was: the reader's own then.
   */
  lifeMs?: number;
}
/** The winner wrote nothing after all: the key is free again at once. */
export interface ReleaseRecord {
  kind: 'release';
  scope: string;
  claimId: string;
  at: number;
}
/** Written in the creation's own transaction: the request created something and answered this. */
export interface DoneRecord {
  kind: 'done';
  scope: string;
  fingerprint: string;
  at: number;
  answer: StoredAnswer;
}
export type IdempotencyRecord = ClaimRecord | ReleaseRecord | DoneRecord;

export function decodeIdempotencyRecord(value: string): IdempotencyRecord {
  const parsed = JSON.parse(value) as IdempotencyRecord;
  const known = ['claim', 'release', 'done'].includes(parsed?.kind);
  if (!known || typeof parsed.scope !== 'string' || typeof parsed.at !== 'number') {
    throw new Error('not an idempotency record');
  }
  return parsed;
}

export const IDEMPOTENCY_KEYS_VIEW: ViewSpec<IdempotencyRecord> = {
  topic: 'idempotencyKeys',
  decode: decodeIdempotencyRecord,
};
