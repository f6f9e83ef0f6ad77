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
 */
export function applySelection(resource: HalResource, selection: Selection): Hal {
  const embeddable = resource[EMBEDDABLE];
  const wanted = new Set(selection.embedded ?? resource[DEFAULT_EMBEDDED] ?? []);
  // Entries and fromEntries, never `obj[name] =`: a name like `__proto__` stays an ordinary key.
  const embedded: [string, Hal | Hal[]][] = Object.entries(resource._embedded ?? {});
  for (const rel of wanted) {
    const value = embeddable?.get(rel)?.();
    if (value !== undefined) embedded.push([rel, Array.isArray(value) ? value.map(toPlain) : toPlain(value)]);
  }
  const out: Hal = { ...resource };
  if (embedded.length > 0) out._embedded = Object.fromEntries(embedded);
  else delete out._embedded;
  if (!selection.fields) return out;
  const keep = new Set(selection.fields);
  return Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k))) as Hal;
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
