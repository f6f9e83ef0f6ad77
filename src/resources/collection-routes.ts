import { canonicalId } from '../lib/canonical-id';
import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { atomicRequested, bulkElements, bulkFailure, elementProblem, isBulkBody, listedFailures } from '../http/bulk';
import { halResource, link, type HalResource, type Link } from '../http/hal';
import { idempotently } from '../http/idempotency';
import { evaluatePreconditions } from '../http/preconditions';
import { mergePatch } from '../http/merge-patch';
import { ownBases, ownPath } from '../http/own-href';
import { REPORTS_BODY_ERRORS } from '../http/body-validation';
import { pageLinks, type PageQuery } from '../http/paging';
import { invalidField, type ProblemDetail } from '../problems/problem-detail';
import { ProblemError } from '../problems/problem-error';
import { applySelection, selectionOf, type Selection } from '../http/selection';
import { requireObjectBody } from '../problems/validation';
import { ID_PATTERN } from './resource-declaration';
import { inputForm, type ResourceRouteDeps } from './resource-context';
import { patchFromRepresentation } from './representation-input';
import { prepareInput } from './resource-input';
import type { RegisteredResource } from './resource-registry';
import { representation } from './resource-representation';
import { resourceRouteSchemas } from './resource-schemas';
import type { ResourceWrite, StoredResource } from './resource-store';
import type { WriteContext } from '../kafka/write-context';

interface Planned {
  index: number;
  write: ResourceWrite;
}

/**
 * The 2xx body of a bulk operation: the resources it wrote, embedded, and linked as `item` in the order sent (as a
 * page links its items), so an answer without `_embedded` (`embedded=`, a `fields` without it) still says which.
 */
function bulkBody(resource: RegisteredResource, reps: HalResource[]): HalResource {
  const { collection } = resource.decl;
  const links = { self: link(`/${collection}`), item: reps.map((r) => r._links.self as Link) };
  return halResource({ count: reps.length }, links, { [collection]: () => reps }, [collection]);
}

/** GET (paged list), POST (one object, or a bulk create), PATCH (bulk update). */
export function collectionRoutes(app: FastifyInstance, resource: RegisteredResource, deps: ResourceRouteDeps): void {
  const { store, registry } = deps;
  const keys = deps.idempotency;
  const { decl } = resource;
  const path = `/${decl.collection}`;
  const rep = (s: StoredResource) => representation(s, registry, store);
  const schemas = resourceRouteSchemas(decl);
  /*
   * Fastify checks the declared body, but a bulk body's verdict is per element (and, with ?atomic=false, some are
   * written), and relations must name existing resources: the handler's own checks decide, with the same ajv, and
   * explain each failure as they always did. So Fastify's verdict is attached, not answered.
   */
  const bodyRoute = (schema: object) => ({ schema, ...REPORTS_BODY_ERRORS });

  app.get<{ Querystring: PageQuery }>(path, { schema: schemas.list }, async (request) => {
    const all = store.list(decl.collection);
    const { offset, limit } = request.query;
    const page = all.slice(offset, offset + limit);
    return halResource(
      { count: page.length, total: all.length },
      { ...pageLinks(path, offset, limit, all.length), item: page.map((s) => link(`${path}/${s.id}`)) },
      { [decl.collection]: () => page.map(rep) },
      [decl.collection],
    );
  });

  const stored = (id: string) => {
    const s = store.get(decl.collection, id);
    if (!s) {
      throw new ProblemError('not-found', `The ${decl.name} this Idempotency-Key created (${id}) no longer exists.`);
    }
    return s;
  };

  // Ids are chosen here (UUIDv7, as the store would): an Idempotency-Key's answer names them in their transaction.
  app.post(path, bodyRoute(schemas.create), async (request, reply) => {
    if (!isBulkBody(request.body, decl.name)) {
      const prepared = prepareInput(resource, requireObjectBody(request.body), store);
      if (!prepared.ok)
        throw new ProblemError('validation-failed', `The body is not a valid ${decl.name}.`, {
          errors: prepared.errors,
        });
      const id = uuidv7();
      const created = await idempotently<StoredResource>(request, reply, keys, {
        describe: () => ({ status: 201, ids: [id] }),
        replay: (answer) => stored(answer.ids[0]),
        create: async (keyed) => {
          const [created] = await store.write(
            [{ op: 'create', collection: decl.collection, name: decl.name, data: prepared.data, id }],
            { trace: request.trace, idempotency: keyed },
          );
          return created as StoredResource;
        },
      });
      return reply.code(201).header('location', `${path}/${created.id}`).send(rep(created));
    }
    const atomic = atomicRequested(request);
    const planned: Planned[] = [];
    const failures: ProblemDetail[] = [];
    const ids: string[] = [];
    bulkElements(request.body, decl.name).forEach((element, index) => {
      const prepared = prepareInput(resource, element, store);
      if (!prepared.ok) {
        const detail = `Element ${index} is not a valid ${decl.name}.`;
        failures.push(elementProblem(decl.collection, index, 400, detail, prepared.errors));
        return;
      }
      const id = uuidv7();
      ids.push(id);
      const write = { op: 'create' as const, collection: decl.collection, name: decl.name, data: prepared.data, id };
      planned.push({ index, write });
    });
    const body = await idempotently<HalResource>(request, reply, keys, {
      describe: () =>
        failures.length > 0 ? { status: 400, ids, errors: listedFailures(failures) } : { status: 201, ids },
      replay: (answer) => {
        // From their current state: the orders deleted since are no longer listed; 404 once none is left.
        const left = answer.ids.flatMap((id) => store.get(decl.collection, id) ?? []);
        if (left.length === 0 && answer.ids.length > 0) {
          const detail = `The ${decl.collection} this Idempotency-Key created no longer exist.`;
          throw new ProblemError('not-found', detail);
        }
        const saved = bulkBody(resource, left.map(rep));
        if (answer.errors) {
          const processed = applySelection(saved, selectionOf(request));
          throw bulkFailure(false, answer.errors, { body: processed, count: answer.ids.length });
        }
        return saved;
      },
      create: (keyed) =>
        commit(atomic, planned, failures, { trace: request.trace, idempotency: keyed }, selectionOf(request)),
    });
    return reply.code(201).send(body);
  });

  // Planned and written under store.changing over every order it names: the states its patches merge into are
  // still the current ones when its write lands.
  app.patch(path, bodyRoute(schemas.updateMany), async (request) => {
    evaluatePreconditions(request);
    const bases = ownBases(request, deps.publicUrl);
    const elements = bulkElements(request.body, decl.name);
    const named = elements.flatMap((element, index) => {
      const target = isObject(element) ? selfTarget(element._links, index, bases) : undefined;
      return target && 'id' in target ? [{ collection: decl.collection, id: target.id }] : [];
    });
    return store.changing(named, async (deadline) => {
      const atomic = atomicRequested(request);
      const planned: Planned[] = [];
      const failures: ProblemDetail[] = [];
      // One element per resource: two would leave the answer listing a state that was overwritten in the same write.
      const first = new Map<string, number>();
      elements.forEach((element, index) => {
        const outcome = planUpdate(element, index, bases);
        const id = 'failure' in outcome ? undefined : outcome.write.id;
        const earlier = id === undefined ? undefined : first.get(id);
        if ('failure' in outcome) failures.push(outcome.failure);
        else if (earlier !== undefined) {
          const detail = `Element ${index} names the same ${decl.name} as element ${earlier}; send one per ${decl.name}.`;
          const again = invalidField('/_links/self/href', `names the ${decl.name} element ${earlier} names`);
          failures.push(elementProblem(decl.collection, index, 400, detail, [again]));
        } else {
          if (id !== undefined) first.set(id, index);
          planned.push(outcome);
        }
      });
      return commit(atomic, planned, failures, { trace: request.trace, deadline }, selectionOf(request));
    });
  });

  /**
   * Atomic: any failure writes nothing. Non-atomic: the valid elements are written, the failures reported, with
   * `processed` shaped as the 2xx would be (spec "Bulk rules" 2.4): the request's selection applies to it.
   */
  async function commit(
    atomic: boolean,
    planned: Planned[],
    failures: ProblemDetail[],
    on: WriteContext,
    selection: Selection,
  ): Promise<HalResource> {
    if (failures.length > 0 && atomic) throw bulkFailure(true, failures);
    const writes = planned.map((p) => p.write);
    const saved = writes.length > 0 ? await store.write(writes, on) : [];
    const body = bulkBody(
      resource,
      saved.map((s) => rep(s as StoredResource)),
    );
    if (failures.length > 0)
      throw bulkFailure(false, failures, { body: applySelection(body, selection), count: saved.length });
    return body;
  }

  const selfPattern = new RegExp(`^/${decl.collection}/(${ID_PATTERN.slice(1, -1)})$`);

  function planUpdate(element: unknown, index: number, bases: string[]): Planned | { failure: ProblemDetail } {
    const fail = (status: 400 | 404, detail: string, errors?: ProblemDetail[]) => ({
      failure: elementProblem(decl.collection, index, status, detail, errors),
    });
    if (!isObject(element))
      return fail(400, `Element ${index} must be an object.`, [invalidField('/', 'must be an object')]);
    const target = selfTarget(element._links, index, bases);
    if (!('id' in target)) return fail(400, target.detail, [target.error]);
    const existing = store.get(decl.collection, target.id);
    if (!existing) return fail(404, `Element ${index} names ${target.href}, which does not exist.`);
    const { patch, errors } = patchFromRepresentation(decl, element, existing.id, rep(existing)._links, bases);
    if (errors.length > 0)
      return fail(400, `Element ${index} sends _links or an id that are not the current ones.`, errors);
    const prepared = prepareInput(resource, mergePatch(inputForm(existing), patch), store, existing.data);
    if (!prepared.ok) return fail(400, `Element ${index} would make an invalid ${decl.name}.`, prepared.errors);
    return {
      index,
      write: { op: 'replace', collection: decl.collection, name: decl.name, id: existing.id, data: prepared.data },
    };
  }

  /**
   * The id an element's `_links.self.href` names, or why it names none of this collection, with the field error
   * (validation-failed lists one per offending field): `/_links` when there is no object of links, else its href.
   */
  function selfTarget(
    links: unknown,
    index: number,
    bases: string[],
  ): { id: string; href: string } | { detail: string; error: ProblemDetail } {
    const detail = `Element ${index} needs _links.self.href naming one of ${path}.`;
    const shape = `{"self": {"href": "${path}/<id>"}}`;
    if (!isObject(links)) {
      return { detail, error: invalidField('/_links', `${links === undefined ? 'is required' : 'must be'}: ${shape}`) };
    }
    const pointer = '/_links/self/href';
    const href = isObject(links.self) ? links.self.href : undefined;
    if (typeof href !== 'string') return { detail, error: invalidField(pointer, `must be a string: ${path}/<id>`) };
    const own = ownPath(href, bases);
    if (own === undefined) {
      return {
        detail: `Element ${index} names a resource that is not this service's.`,
        error: invalidField(
          pointer,
          `names a resource of another service; use ${path}/<id> or an absolute URL of ours`,
        ),
      };
    }
    const m = selfPattern.exec(own);
    if (!m) return { detail, error: invalidField(pointer, `must be ${path}/<id>, with no trailing / or query`) };
    return { id: canonicalId(m[1]), href };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
