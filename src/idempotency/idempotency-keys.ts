import { randomUUID } from 'node:crypto';
import { writeThenCatchUp } from '../kafka/read-your-writes';
import type {
  KeyedCreation,
  OutgoingRecord,
  PublishOptions,
  Publisher,
  RecordPosition,
  StateView,
  ViewSource,
} from '../kafka/types';
import { Deadline } from '../lib/deadline';
import { startPeriodicSweep, type StopSweeping } from '../lib/periodic-sweep';
import type { Logger } from '../logger';
import { CLAIM_PREFIX, decided, KeyFold, type KnownDecision } from './key-fold';
import {
  decodeIdempotencyRecord,
  IDEMPOTENCY_KEYS_VIEW,
  type ClaimRecord,
  type DoneRecord,
  type IdempotencyRecord,
  type ReleaseRecord,
  type StoredAnswer,
} from './idempotency-records';

/** claim keys whose last record is older than this are tombstoned by the sweeper, to free memory */
const CLAIM_CLEANUP_AFTER_MS = 3600 * 1000;

export type KeyDecision =
  KnownDecision | { kind: 'new'; run<T>(describe: Describe, create: (keyed: KeyedCreation) => Promise<T>): Promise<T> };

/** The answer of a creation, from its write's records (for ids only the store chooses) or known before. */
export type Describe = (records: OutgoingRecord[]) => StoredAnswer;

/** A keyed request's creation: its first write (a publish with it as `idempotency`) carries the done record. */
interface Context extends KeyedCreation {
  claim: ClaimRecord;
  describe: Describe;
  deadline: Deadline;
  /** a write was attempted: from then on the key stays claimed until done or expiry */
  wrote: boolean;
}

export interface IdempotencyKeysDeps {
  view: StateView<IdempotencyRecord>;
  /** the process's own publisher, unwrapped */
  publisher: Publisher;
  topic: string;
  partitionFor(key: string): number;
  /** KAFKA_TIMEOUT_MS: the request's one deadline, and what bounds a claim's life */
  timeoutMs: number;
  /**
   * Before a replay: the views the answer is read from catch up with everything committed so far. The done
   * record this process has seen was committed with the creation, but another view (the tasks') may not have
   * applied that transaction yet, and would answer 404 for what the key created.
   */
  beforeReplay?: () => Promise<void>;
  logger: Logger;
}

/**
 * Idempotency-Key (IETF draft) state, kept in a compacted topic so it holds
 * across api instances and restarts.
 *
 * A keyed request first writes a claim, then waits for its view to apply it.
 * Claims and answers of one key share a partition, and every instance folds
 * them in that partition's order, so all agree: the first live claim wins,
 * later ones are in flight (409). The winner's creation carries the done
 * record in its own transaction (see wrap), so a creation can never be
 * committed without its key, whatever crash or 503 happens.
 *
 * A claim lives 2 × KAFKA_TIMEOUT_MS + 5 s: a write of its request can commit
 * only within 2 × KAFKA_TIMEOUT_MS of the claim (the request's deadline, plus
 * the longest its transaction can outlive it), so a later claim never races a
 * creation that could still land. The 5 s cover clock skew between instances.
 * The KAFKA_TIMEOUT_MS is the writer's: a claim says its life (lifeMs), so
 * instances configured otherwise (a rolling change) time it alike.
 */
export class IdempotencyKeys {
  private readonly fold: KeyFold;
  /** keys being handled by this process, with their fingerprints */
  private readonly local = new Map<string, string>();
  /** the creations under way: only these complete a write (a look-alike object is ignored) */
  private readonly creations = new WeakSet<KeyedCreation>();
  private stopSweeping: StopSweeping = () => undefined;

  /** how long a claim holds its key (2 × KAFKA_TIMEOUT_MS + 5 s, see above) */
  get claimTtlMs(): number {
    return this.fold.claimTtlMs;
  }

  /** The keys on this process's view of the idempotency-keys topic. */
  static async open(views: ViewSource, deps: Omit<IdempotencyKeysDeps, 'view'>): Promise<IdempotencyKeys> {
    return new IdempotencyKeys({ ...deps, view: await views.view(IDEMPOTENCY_KEYS_VIEW) });
  }

  constructor(private readonly deps: IdempotencyKeysDeps) {
    this.fold = new KeyFold(2 * deps.timeoutMs + 5000);
    for (const value of deps.view.values()) {
      this.fold.apply(value.kind === 'done' ? value.scope : `${CLAIM_PREFIX}${value.scope}`, value);
    }
    deps.view.onChange((key, value) => this.fold.apply(key, value));
  }

  /**
   * Decides what a request with this key does: replay a stored answer, refuse
   * (another body: reused; not answered yet: in flight), or go ahead as the
   * key's one creator (`new`, whose run() must wrap the creation).
   */
  async begin(tenant: string, key: string, fingerprint: string): Promise<KeyDecision> {
    const decision = await this.claimOrDecide(tenant, key, fingerprint);
    if (decision.kind === 'replay') await this.deps.beforeReplay?.();
    return decision;
  }

  private async claimOrDecide(tenant: string, key: string, fingerprint: string): Promise<KeyDecision> {
    const scope = `${tenant}/${key}`;
    // The request's one deadline, for the catching up below and the claim alike.
    const deadline = new Deadline(this.deps.timeoutMs);
    let known = this.fold.decide(scope, fingerprint);
    if (known?.kind === 'in-flight' && !this.local.has(scope)) {
      // Another instance's claim, maybe already answered: its answer is in Kafka, and this view may only lag behind.
      // Caught up first, a client that got its 202 there and repeats the request here is replayed, not told 409.
      await this.deps.view.syncedSince(Date.now(), deadline.remaining());
      known = this.fold.decide(scope, fingerprint);
    }
    if (known) return known;
    const handling = this.local.get(scope);
    if (handling !== undefined) return handling === fingerprint ? { kind: 'in-flight' } : { kind: 'reused' };
    this.local.set(scope, fingerprint);
    const claim: ClaimRecord = {
      kind: 'claim',
      scope,
      claimId: randomUUID(),
      fingerprint,
      at: Date.now(),
      lifeMs: this.claimTtlMs,
    };
    let claimed = false;
    try {
      await writeThenCatchUp(this.deps.view, deadline.remaining(), async (timeoutMs) => {
        const positions = await this.deps.publisher.publish([this.record(`${CLAIM_PREFIX}${scope}`, claim)], {
          timeoutMs,
        });
        claimed = true;
        return positions;
      });
      // The view has now applied everything before the claim in the key's partition.
      const done = this.fold.answer(scope);
      if (done) {
        this.local.delete(scope);
        return decided(done, fingerprint);
      }
      const winner = this.fold.claim(scope);
      if (winner?.claimId !== claim.claimId) {
        this.local.delete(scope);
        return winner && winner.fingerprint !== fingerprint ? { kind: 'reused' } : { kind: 'in-flight' };
      }
      return {
        kind: 'new',
        run: (describe, create) => this.run({ keyedCreation: true, claim, describe, deadline, wrote: false }, create),
      };
    } catch (err) {
      this.local.delete(scope);
      // Written but not read back in time (a dead writer's transaction holding the partition): the request answers
      // 503 having created nothing, so its claim goes too. Kept, it would tell the client's retry 409 in flight for
      // the claim's whole life, with nothing in flight.
      if (claimed) this.release(claim);
      throw err;
    }
  }

  /**
   * The publisher the stores write with. The first write made with a keyed
   * creation (PublishOptions.idempotency, which run() hands to the creation)
   * gets the done record (and the claim's release) appended, in the same
   * transaction; its timeout is what is left of the request's deadline.
   * Without one it is the publisher itself. The creation is handed down, not
   * kept in an AsyncLocalStorage, whose promise hooks would slow every
   * request of the process from the first keyed one on.
   */
  wrap(inner: Publisher): Publisher {
    const completing = (options: PublishOptions | undefined): { ctx?: Context; options?: PublishOptions } => {
      const keyed = options?.idempotency;
      const ctx = keyed && this.creations.has(keyed) ? (keyed as Context) : undefined;
      if (!ctx || ctx.wrote) return { options };
      ctx.wrote = true;
      const timeoutMs = Math.min(options?.timeoutMs ?? Infinity, ctx.deadline.remaining());
      return { ctx, options: { ...options, timeoutMs } };
    };
    return {
      publish: async (records, options) => {
        const { ctx, options: opts } = completing(options);
        if (!ctx) return inner.publish(records, opts);
        const extra = this.completion(ctx, records);
        const positions = await inner.publish([...records, ...extra], opts);
        this.completed(extra);
        return positions.slice(0, records.length);
      },
      publishStaged: async (first, then, options) => {
        const { ctx, options: opts } = completing(options);
        if (!ctx) return inner.publishStaged(first, then, opts);
        let extra: OutgoingRecord[] = [];
        let more = 0;
        const positions = await inner.publishStaged(
          first,
          (p: RecordPosition[]) => {
            const next = then(p);
            more = next.length;
            extra = this.completion(ctx, [...first, ...next]);
            return [...next, ...extra];
          },
          opts,
        );
        this.completed(extra);
        return positions.slice(0, first.length + more);
      },
    };
  }

  /** Tombstones answers older than 24 h and claims long expired, every intervalMs; writing one twice is harmless. */
  startSweeping(intervalMs = 60000): void {
    this.stopSweeping();
    this.stopSweeping = startPeriodicSweep({
      intervalMs,
      sweep: () => this.sweep(),
      logger: this.deps.logger,
      failure: 'could not forget expired idempotency keys',
    });
  }

  stop(): void {
    this.stopSweeping();
  }

  async sweep(now = Date.now()): Promise<number> {
    const keys = this.fold.expiredAnswers(now);
    for (const value of this.deps.view.values()) {
      if (value.kind !== 'done' && value.at + Math.max(this.claimTtlMs, CLAIM_CLEANUP_AFTER_MS) <= now) {
        keys.push(`${CLAIM_PREFIX}${value.scope}`);
      }
    }
    for (let i = 0; i < keys.length; i += 500) {
      const tombstones = keys.slice(i, i + 500).map((key) => this.record(key, null));
      await this.deps.publisher.publish(tombstones, { timeoutMs: this.deps.timeoutMs });
    }
    return keys.length;
  }

  private async run<T>(ctx: Context, create: (keyed: KeyedCreation) => Promise<T>): Promise<T> {
    try {
      this.creations.add(ctx);
      return await create(ctx);
    } finally {
      this.creations.delete(ctx);
      this.local.delete(ctx.claim.scope);
      if (!ctx.wrote) this.release(ctx.claim);
    }
  }

  /** Nothing was written: anyone may use the key at once. Best effort; otherwise the claim just expires. */
  private release(claim: ClaimRecord): void {
    const release: ReleaseRecord = { kind: 'release', scope: claim.scope, claimId: claim.claimId, at: Date.now() };
    const key = `${CLAIM_PREFIX}${claim.scope}`;
    this.fold.apply(key, release);
    this.deps.publisher
      .publish([this.record(key, release)], { timeoutMs: this.deps.timeoutMs })
      .catch((err: unknown) => {
        this.deps.logger.warn({ err, scope: claim.scope }, 'could not release an idempotency key');
      });
  }

  private completion(ctx: Context, records: OutgoingRecord[]): OutgoingRecord[] {
    const { scope, claimId, fingerprint } = ctx.claim;
    const at = Date.now();
    const done: DoneRecord = { kind: 'done', scope, fingerprint, at, answer: ctx.describe(records) };
    const release: ReleaseRecord = { kind: 'release', scope, claimId, at };
    return [this.record(scope, done), this.record(`${CLAIM_PREFIX}${scope}`, release)];
  }

  /** Committed: a repeat on this instance replays at once, before the view has read it back. */
  private completed(extra: OutgoingRecord[]): void {
    for (const r of extra) if (r.value !== null) this.fold.apply(r.key, decodeIdempotencyRecord(r.value));
  }

  /** A key's claims and answer go to one partition (its scope's), so one order decides between them. */
  private record(key: string, value: IdempotencyRecord | null): OutgoingRecord {
    const scope = key.startsWith(CLAIM_PREFIX) ? key.slice(CLAIM_PREFIX.length) : key;
    return {
      topic: this.deps.topic,
      key,
      value: value === null ? null : JSON.stringify(value),
      partition: this.deps.partitionFor(scope),
    };
  }
}
