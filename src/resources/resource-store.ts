import { v7 as uuidv7 } from 'uuid';
import { cloudEventRecord } from '../events/cloud-event';
import {
  KafkaUnavailableError,
  type OutgoingRecord,
  type Publisher,
  type StateView,
  type ViewSource,
  type ViewSpec,
} from '../kafka/types';
import type { WriteContext } from '../kafka/write-context';
import { writeThenRead } from '../kafka/read-your-writes';
import { Deadline } from '../lib/deadline';
import { isoNow } from '../lib/iso-now';
import { inTurnWithin, KeyedSerial } from '../lib/keyed-serial';

export interface StoredResource {
  collection: string;
  id: string;
  /** fields and relation ids, as validated */
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export type ResourceWrite =
  | { op: 'create'; collection: string; name: string; data: Record<string, unknown>; id?: string }
  | { op: 'replace'; collection: string; name: string; id: string; data: Record<string, unknown> }
  | { op: 'delete'; collection: string; name: string; id: string };

export interface ResourceStoreDeps {
  view: StateView<StoredResource>;
  publisher: Publisher;
  resourcesTopic: string;
  domainEventsTopic: string;
  timeoutMs: number;
}

const keyOf = (collection: string, id: string) => `${collection}/${id}`;

/**
 * Resources live in a compacted topic; this is the api's view of it plus the
 * writes. A batch of writes is one transaction together with its domain
 * events, and returns after this process's view has applied it.
 */
export class ResourceStore {
  private readonly changes = new KeyedSerial();

  constructor(private readonly deps: ResourceStoreDeps) {}

  /** The store on this process's view of the resources topic. */
  static async open(views: ViewSource, deps: Omit<ResourceStoreDeps, 'view'>): Promise<ResourceStore> {
    return new ResourceStore({ ...deps, view: await views.view(RESOURCES_VIEW) });
  }

  get(collection: string, id: string): StoredResource | undefined {
    return this.deps.view.get(keyOf(collection, id));
  }

  /** Creation order: ids are UUIDv7, so sorting by id sorts by time. */
  list(collection: string): StoredResource[] {
    return [...this.deps.view.values()]
      .filter((r) => r.collection === collection)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  count(collection: string): number {
    let n = 0;
    for (const r of this.deps.view.values()) if (r.collection === collection) n += 1;
    return n;
  }

  /**
   * Runs a read-then-write of these resources alone among this process's changes of any of them: what `change`
   * read (that a resource exists, its preconditions, the state a merge patch applies to) still holds when its write
   * lands. Without it, two PATCHes of different fields each wrote the state they read, one undoing the other, and a
   * PATCH that read a resource before a DELETE's 204 brought it back. The deadline starts here, so a change that
   * waited behind others still answers within KAFKA_TIMEOUT_MS: each one before it ends within its own, which
   * started earlier. Pass it to `write`. One whose turn comes with less than a quarter of it left answers 503 without
   * writing: a transaction given a few milliseconds would fail, and the publisher takes a failed transaction for
   * Kafka being down, refusing every write of the process until its probe answers.
   */
  changing<T>(
    resources: readonly { collection: string; id: string }[],
    change: (deadline: Deadline) => Promise<T>,
  ): Promise<T> {
    const keys = resources.map((r) => keyOf(r.collection, r.id));
    const why = 'earlier writes of the same resource took most of KAFKA_TIMEOUT_MS; nothing was written';
    return inTurnWithin(this.changes, keys, this.deps.timeoutMs, () => new KafkaUnavailableError(why), change);
  }

  /** `on.trace`: the request's span, which the domain events name; `on.idempotency`: its keyed creation. */
  async write(writes: ResourceWrite[], on: WriteContext = {}): Promise<(StoredResource | undefined)[]> {
    const now = isoNow();
    const records: OutgoingRecord[] = [];
    const results: (StoredResource | undefined)[] = [];
    for (const w of writes) {
      const id = w.op === 'create' ? (w.id ?? uuidv7()) : w.id;
      const key = keyOf(w.collection, id);
      const previous = this.deps.view.get(key);
      const stored =
        w.op === 'delete'
          ? undefined
          : {
              collection: w.collection,
              id,
              data: w.data,
              createdAt: previous?.createdAt ?? now,
              updatedAt: now,
            };
      results.push(stored);
      records.push({ topic: this.deps.resourcesTopic, key, value: stored ? JSON.stringify(stored) : null });
      const event = w.op === 'create' ? 'created' : w.op === 'replace' ? 'updated' : 'deleted';
      records.push(
        cloudEventRecord({
          topic: this.deps.domainEventsTopic,
          key,
          type: `${w.name}.${event}`,
          subject: `/${key}`,
          data: { event: `${w.name}.${event}`, resource: `/${key}`, id, ...(stored ? { data: stored.data } : {}) },
          trace: on.trace,
        }),
      );
    }
    await writeThenRead(this.deps.view, on.deadline?.remaining() ?? this.deps.timeoutMs, (timeoutMs) =>
      this.deps.publisher.publish(records, { timeoutMs, idempotency: on.idempotency }),
    );
    return results;
  }
}

export function decodeStoredResource(value: string): StoredResource {
  const parsed = JSON.parse(value) as StoredResource;
  if (typeof parsed?.collection !== 'string' || typeof parsed.id !== 'string' || typeof parsed.data !== 'object') {
    throw new Error('not a stored resource');
  }
  return parsed;
}

const RESOURCES_VIEW: ViewSpec<StoredResource> = { topic: 'resources', decode: decodeStoredResource };
