import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bodyErrors, REPORTS_BODY_ERRORS } from '../http/body-validation';
import { evaluatePreconditions } from '../http/preconditions';
import { mergePatch } from '../http/merge-patch';
import { ownBases } from '../http/own-href';
import { ProblemError } from '../problems/problem-error';
import { requireObjectBody } from '../problems/validation';
import { findOr404, inputForm, type ResourceRouteDeps } from './resource-context';
import { inputFromRepresentation, patchFromRepresentation, pointedAsSent } from './representation-input';
import { judgeInput, prepareInput } from './resource-input';
import type { RegisteredResource } from './resource-registry';
import { representation } from './resource-representation';
import { resourceRouteSchemas } from './resource-schemas';

type IdParams = { Params: { id: string } };

/** GET, PUT (full replacement of an existing resource), PATCH (merge patch), DELETE. */
export function itemRoutes(app: FastifyInstance, resource: RegisteredResource, deps: ResourceRouteDeps): void {
  const { store, registry } = deps;
  const { decl } = resource;
  const path = `/${decl.collection}/:id`;
  const schemas = resourceRouteSchemas(decl);

  // Not async: Fastify sends what a read returns in the same turn, without a promise and a microtask turn.
  app.get<IdParams>(path, { schema: schemas.get }, (request) =>
    representation(findOr404(store, resource, request.params.id), registry, store),
  );

  // Spec: PUT never creates and never updates partially; a missing field is a 400 like any invalid value.
  // The body's schema is the resource's own: after the 404, Fastify's verdict is the answer, then the relations.
  // What GET answered, changed and sent back, is a full representation too (representation-input.ts).
  // The relations a PUT body gave as links, by request: its errors are pointed at the links (pointedAsSent).
  const linkedOf = new WeakMap<FastifyRequest, readonly string[]>();
  const fromRepresentation = async (request: FastifyRequest<IdParams>) => {
    findOr404(store, resource, request.params.id);
    evaluatePreconditions(request);
    const bases = ownBases(request, deps.publicUrl);
    const { body, errors, linked } = inputFromRepresentation(decl, request.body, request.params.id, bases);
    if (errors.length > 0)
      throw new ProblemError('validation-failed', `The body is not a ${decl.name} to replace this one with.`, {
        errors,
      });
    request.body = body;
    linkedOf.set(request, linked);
  };
  const replaceOptions = { schema: schemas.replace, preValidation: fromRepresentation, ...REPORTS_BODY_ERRORS };
  app.put<IdParams>(path, replaceOptions, async (request) =>
    store.changing([{ collection: decl.collection, id: request.params.id }], async (deadline) => {
      const existing = findOr404(store, resource, request.params.id);
      evaluatePreconditions(request);
      const prepared = judgeInput(resource, request.body, bodyErrors(request), store, existing.data);
      if (!prepared.ok)
        throw new ProblemError('validation-failed', `The body is not a full, valid ${decl.name}.`, {
          errors: pointedAsSent(decl, prepared.errors, linkedOf.get(request) ?? []),
        });
      const [saved] = await store.write(
        [{ op: 'replace', collection: decl.collection, name: decl.name, id: existing.id, data: prepared.data }],
        { trace: request.trace, deadline },
      );
      return representation(saved ?? existing, registry, store);
    }),
  );

  // What a merge patch may hold is judged on the merged result, which the handler validates (and explains).
  // Every change reads and writes under store.changing: what it read still holds when its write lands.
  app.patch<IdParams>(path, { schema: schemas.patch, ...REPORTS_BODY_ERRORS }, async (request) =>
    store.changing([{ collection: decl.collection, id: request.params.id }], async (deadline) => {
      const existing = findOr404(store, resource, request.params.id);
      evaluatePreconditions(request);
      const sent = patchFromRepresentation(
        decl,
        requireObjectBody(request.body),
        existing.id,
        representation(existing, registry, store)._links,
        ownBases(request, deps.publicUrl),
      );
      if (sent.errors.length > 0)
        throw new ProblemError(
          'validation-failed',
          `The patch sends _links or an id that are not the ${decl.name}'s current ones.`,
          {
            errors: sent.errors,
          },
        );
      const patch = sent.patch;
      const prepared = prepareInput(resource, mergePatch(inputForm(existing), patch), store, existing.data);
      if (!prepared.ok)
        throw new ProblemError('validation-failed', `The patched ${decl.name} would be invalid.`, {
          errors: prepared.errors,
        });
      const [saved] = await store.write(
        [{ op: 'replace', collection: decl.collection, name: decl.name, id: existing.id, data: prepared.data }],
        { trace: request.trace, deadline },
      );
      return representation(saved ?? existing, registry, store);
    }),
  );

  app.delete<IdParams>(path, { schema: schemas.remove }, async (request, reply) =>
    store.changing([{ collection: decl.collection, id: request.params.id }], async (deadline) => {
      const existing = findOr404(store, resource, request.params.id);
      evaluatePreconditions(request);
      const remove = { op: 'delete' as const, collection: decl.collection, name: decl.name, id: existing.id };
      await store.write([remove], { trace: request.trace, deadline });
      return reply.code(204).send();
    }),
  );
}
