import type { ClaimRecord, DoneRecord, IdempotencyRecord, StoredAnswer } from './idempotency-records';

/** How long a key is remembered after its request created something (the IETF draft leaves it to the server). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3600 * 1000;
/** the longest life a claim can be given: 2 × the largest KAFKA_TIMEOUT_MS (120 s) + 5 s */
const MAX_CLAIM_LIFE_MS = 2 * 120000 + 5000;
/** claims live under their own key ('!' cannot start a tenant name), so a claim never overwrites an answer */
export const CLAIM_PREFIX = '!claim/';

/** What the keys topic already decides for a request: its answer again, or a refusal. */
export type KnownDecision =
  /** `answeredAt`: when the first request's answer was written (ms since the epoch, the writer's clock) */
  { kind: 'replay'; answer: StoredAnswer; answeredAt: number } | { kind: 'reused' } | { kind: 'in-flight' };

interface Entry {
  done?: DoneRecord;
  claim?: ClaimRecord;
}

/**
 * The keys' state as every instance folds the idempotency-keys topic, in partition order: a key's answer, and the
 * claim that holds it while its first request writes. A claim replaces another only once that one has expired, by
 * the claims' own times, so all instances pick the same winner.
 */
export class KeyFold {
  private readonly entries = new Map<string, Entry>();

  constructor(readonly claimTtlMs: number) {}

  /** An answer still remembered (IDEMPOTENCY_KEY_TTL_MS), or undefined. */
  answer(scope: string): DoneRecord | undefined {
    const done = this.entries.get(scope)?.done;
    return done && done.at + IDEMPOTENCY_KEY_TTL_MS > Date.now() ? done : undefined;
  }

  claim(scope: string): ClaimRecord | undefined {
    return this.entries.get(scope)?.claim;
  }

  /** The answer to replay, or a refusal while another request holds a live claim; undefined: nothing decides yet. */
  decide(scope: string, fingerprint: string): KnownDecision | undefined {
    const done = this.answer(scope);
    if (done) return decided(done, fingerprint);
    const claim = this.claim(scope);
    if (claim && this.expiryOf(claim) > Date.now()) {
      return claim.fingerprint === fingerprint ? { kind: 'in-flight' } : { kind: 'reused' };
    }
    return undefined;
  }

  /** Scopes whose answer is older than `now` allows to keep. */
  expiredAnswers(now: number): string[] {
    const scopes: string[] = [];
    for (const [scope, entry] of this.entries) {
      if (entry.done && entry.done.at + IDEMPOTENCY_KEY_TTL_MS <= now) scopes.push(scope);
    }
    return scopes;
  }

  /** When a claim stops holding its key: by the life its writer gave it, so all instances agree. */
  expiryOf(claim: ClaimRecord): number {
    const life = claim.lifeMs;
    const given = typeof life === 'number' && Number.isFinite(life) && life > 0 && life <= MAX_CLAIM_LIFE_MS;
    return claim.at + (given ? life : this.claimTtlMs);
  }

  /** One record of the topic, in partition order. A tombstone on a claim key (cleanup) never ends a live claim. */
  apply(key: string, value: IdempotencyRecord | undefined): void {
    const isClaimKey = key.startsWith(CLAIM_PREFIX);
    const scope = isClaimKey ? key.slice(CLAIM_PREFIX.length) : key;
    const entry = this.entries.get(scope) ?? {};
    if (!isClaimKey) {
      entry.done = value?.kind === 'done' ? value : undefined;
    } else if (value?.kind === 'claim') {
      if (!entry.claim || value.at >= this.expiryOf(entry.claim)) entry.claim = value;
    } else if (value?.kind === 'release') {
      if (entry.claim?.claimId === value.claimId) entry.claim = undefined;
    } else if (value === undefined && entry.claim && this.expiryOf(entry.claim) <= Date.now()) {
      entry.claim = undefined;
    }
    if (entry.done || entry.claim) this.entries.set(scope, entry);
    else this.entries.delete(scope);
  }
}

/** A remembered answer: replayed for the same request, refused for another one under its key. */
export function decided(done: DoneRecord, fingerprint: string): KnownDecision {
  return done.fingerprint === fingerprint
    ? { kind: 'replay', answer: done.answer, answeredAt: done.at }
    : { kind: 'reused' };
}
