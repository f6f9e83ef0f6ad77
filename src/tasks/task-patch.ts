import { canonicalId, canonicalPath } from '../lib/canonical-id';
import type { Hal, Link } from '../http/hal';
import { pointerToken } from '../lib/ill-formed-text';
import { problem, type ProblemDetail } from '../problems/problem-detail';

/** The fields of the tracking resource that name the task itself. */
const ID_FIELDS = ['UUID', 'taskId', 'key'] as const;
/** Fields of the server's that never change: one sent changed asks for a change no PATCH makes. */
const FIXED_FIELDS = ['type', 'topic', 'partition', 'offset'] as const;

const hrefs = (value: unknown): string[] | undefined => {
  const links = Array.isArray(value) ? (value as unknown[]) : [value];
  const out: string[] = [];
  for (const l of links) {
    if (!l || typeof l !== 'object' || typeof (l as Partial<Link>).href !== 'string') return undefined;
    out.push((l as Link).href);
  }
  return out;
};

/**
 * A PATCH may send back the representation GET gave, its status edited (the README's PATCH rule): the server's
 * fields that change as the task runs (progress, attempt, times) are dropped, as a client's copy may be behind. An id
 * naming another task, a field that never changes sent changed (its type, where its events are), or a link that is
 * not the task's current one, is an error, never ignored. `current` is the task's representation now.
 */
export function echoErrors(body: unknown, current: Hal): ProblemDetail[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [];
  const sent = body as Record<string, unknown>;
  const errors: ProblemDetail[] = [];
  for (const name of [...ID_FIELDS, ...FIXED_FIELDS]) {
    const isId = (ID_FIELDS as readonly string[]).includes(name);
    const given = sent[name];
    if (!(name in sent) || (isId && typeof given === 'string' ? canonicalId(given) : given) === current[name]) continue;
    const why = isId
      ? `must be ${String(current[name])}, the task in the path`
      : `is ${JSON.stringify(current[name])} and never changes`;
    errors.push(problem('invalid-field', `/${name} ${why}`, { instance: `/${name}` }));
  }
  const links = sent._links;
  if (links === undefined) return errors;
  if (!links || typeof links !== 'object' || Array.isArray(links)) {
    return [...errors, problem('invalid-field', '/_links must be an object, as GET gave it', { instance: '/_links' })];
  }
  for (const [rel, value] of Object.entries(links as Record<string, unknown>)) {
    const now = Object.hasOwn(current._links, rel) ? hrefs(current._links[rel]) : undefined;
    const given = hrefs(value)?.map(canonicalPath);
    if (now && given && given.length === now.length && given.every((h, i) => h === now[i])) continue;
    const at = `/_links/${pointerToken(rel)}`;
    errors.push(
      problem('invalid-field', `${at} is not the task's current link: send links back unchanged or not at all`, {
        instance: at,
      }),
    );
  }
  return errors;
}
