import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DEFAULT_EMBEDDED, EMBEDDABLE, isHal, type Hal, type HalResource } from './hal';

/** A flat comma list; empty names are dropped, so `fields=` selects nothing. */
function list(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const raw = Array.isArray(value) ? value.join(',') : String(value);
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export interface Selection {
  fields?: string[];
  embedded?: string[];
}

export function selectionOf(request: FastifyRequest): Selection {
  const q = (request.query ?? {}) as Record<string, unknown>;
  return { fields: list(q.fields), embedded: list(q.embedded ?? q.embed) };
}

/**
 * Spec "Retrieval with field selection and embedding": embedding is applied
 * first, then `fields`; `_links` and `_embedded` are selectable like fields;
 * unknown names are ignored; with no `fields` the default keeps everything.
 * Fields keep the resource's order. This runs on every HAL answer, hence one pass and no intermediate arrays.
 */
export function applySelection(resource: HalResource, selection: Selection): Hal {
  const embedded = embeddedOf(resource, selection.embedded ?? resource[DEFAULT_EMBEDDED]);
  const keep = selection.fields ? new Set(selection.fields) : undefined;
  const out = {} as Hal;
  let placed = false;
  for (const key of Object.keys(resource)) {
    if (keep && !keep.has(key)) continue;
    if (key === '_embedded') {
      placed = true;
      if (embedded) out._embedded = embedded;
    } else {
      put(out, key, resource[key]);
    }
  }
  if (embedded && !placed && (!keep || keep.has('_embedded'))) out._embedded = embedded;
  return out;
}

/** `out[key] = value`, except that a key like `__proto__` stays an ordinary key instead of setting the prototype. */
function put(out: Hal, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** The resource's own `_embedded` plus the wanted relations it can embed; undefined when that is nothing. */
function embeddedOf(resource: HalResource, wanted: readonly string[] | undefined): Hal['_embedded'] {
  const own = resource._embedded;
  if (!wanted?.length) return own && Object.keys(own).length > 0 ? own : undefined;
  // Entries and fromEntries, never `obj[name] =`: a relation name like `__proto__` stays an ordinary key.
  const embedded: [string, Hal | Hal[]][] = Object.entries(own ?? {});
  const embeddable = resource[EMBEDDABLE];
  for (const rel of new Set(wanted)) {
    const value = embeddable?.get(rel)?.();
    if (value !== undefined) embedded.push([rel, Array.isArray(value) ? value.map(toPlain) : toPlain(value)]);
  }
  return embedded.length > 0 ? Object.fromEntries(embedded) : undefined;
}

/** Embedded resources carry their own default embeds, never their callers' selection. */
function toPlain(resource: HalResource): Hal {
  return applySelection(resource, {});
}

export const selectionPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('preSerialization', (request, reply, payload, done) => {
      if (reply.statusCode >= 300 || !isHal(payload)) return done(null, payload);
      done(null, applySelection(payload, selectionOf(request)));
    });
  },
  { name: 'hookstream-selection' },
);
