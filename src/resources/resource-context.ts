import type { IdempotencyKeys } from '../idempotency/idempotency-keys';
import { ProblemError } from '../problems/problem-error';
import { ID_PATTERN } from './resource-declaration';
import type { RegisteredResource, ResourceRegistry } from './resource-registry';
import type { ResourceStore, StoredResource } from './resource-store';

export interface ResourceRouteDeps {
  registry: ResourceRegistry;
  store: ResourceStore;
  /** Idempotency-Key state; without it the header is ignored */
  idempotency?: IdempotencyKeys;
  /** PUBLIC_URL (else the api's address): an absolute href on it names one of ours, as one on the request's origin */
  publicUrl?: () => string;
}

const idPattern = new RegExp(ID_PATTERN);

export function findOr404(store: ResourceStore, resource: RegisteredResource, id: string): StoredResource {
  const found = idPattern.test(id) ? store.get(resource.decl.collection, id) : undefined;
  if (!found) throw new ProblemError('not-found', `There is no ${resource.decl.name} ${JSON.stringify(id)}.`);
  return found;
}

/** The client-side form of a stored resource: the fields and relations a PUT would send. */
export function inputForm(stored: StoredResource): Record<string, unknown> {
  return { ...stored.data };
}
