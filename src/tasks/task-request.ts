import { canonicalId } from '../lib/canonical-id';
import { illFormedStringAt, isWellFormed, pointerToken } from '../lib/ill-formed-text';
import { problem, type ProblemDetail } from '../problems/problem-detail';
import type { TaskRegistry } from './task-registry';

/**
 * A task request on the requests topic. The api produces these for POST
 * /tasks; any Kafka client may produce one too (README "Submitting from Kafka").
 * Key: the task id. Value: this JSON.
 */
export interface TaskRequest {
  type: string;
  input: unknown;
  /** the tenant the task belongs to; Kafka clients may leave it out */
  tenant?: string;
  submittedAt?: string;
  /**
   * Set by the api, which wrote task.accepted and the snapshot in the request's
   * transaction: the runner waits for that snapshot rather than accept the task again.
   */
  accepted?: boolean;
}

export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The ids the runner gives requests without a valid key: reserved, so a client's key never names the task of a
 * keyless request (whose id would otherwise be handed out twice, and one of the two requests run as the other).
 */
const GENERATED_ID_PATTERN = /^request-\d+-\d+$/;
/** The fields of a request; any other is refused, as POST /tasks refuses an unknown field. */
const REQUEST_FIELDS = new Set(['type', 'input', 'tenant', 'submittedAt', 'accepted']);

/**
 * The task id of a request: its key when that is a valid task id of a client's choosing (`keyed`), else
 * `request-<partition>-<offset>`, unique by where the request landed. A key in UUID form names its task in lower
 * case (RFC 9562 §4), as a path does: one UUID is one task, whatever case each of its requests was keyed in, and the
 * task's events are keyed as its HTTP resource names it.
 */
export function taskIdOfRequest(
  key: string | null,
  partition: number,
  offset: string,
): { taskId: string; keyed: boolean } {
  if (key !== null && TASK_ID_PATTERN.test(key) && !GENERATED_ID_PATTERN.test(key)) {
    return { taskId: canonicalId(key), keyed: true };
  }
  return { taskId: `request-${partition}-${offset}`, keyed: false };
}
export const DEFAULT_KAFKA_TENANT = 'kafka';
export const TENANT_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** longer than any task type's name may be (task-registry.ts): a rejected request's type is then 'unknown' */
const MAX_TYPE_NAME = 100;

export type ParsedRequest =
  | { ok: true; request: Required<Pick<TaskRequest, 'type' | 'input' | 'tenant' | 'accepted'>> }
  | {
      ok: false;
      errors: ProblemDetail[];
      type: string;
      tenant: string;
      /** marked `accepted`, as the api marks its own requests (see `accepted` on the valid ones) */
      accepted?: boolean;
    };

/**
 * Validates a request as the runner receives it; the same rules POST /tasks applies. A request marked `accepted` is
 * the api's, whose input the api checked already (TaskType.checkInput); the runner runs one only with the api's
 * snapshot of its task, and passes over one without (its task was forgotten).
 */
export function parseTaskRequest(value: string | null, registry: TaskRegistry): ParsedRequest {
  let parsed: unknown;
  try {
    parsed = value === null ? undefined : JSON.parse(value);
  } catch {
    return {
      ok: false,
      type: 'unknown',
      tenant: DEFAULT_KAFKA_TENANT,
      errors: [problem('invalid-field', 'the value is not JSON', { instance: '/' })],
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return {
      ok: false,
      type: 'unknown',
      tenant: DEFAULT_KAFKA_TENANT,
      errors: [problem('invalid-field', 'the value must be a JSON object', { instance: '/' })],
    };
  }
  const r = parsed as Record<string, unknown>;
  const tenantGiven = r.tenant !== undefined;
  const validTenant = typeof r.tenant === 'string' && TENANT_PATTERN.test(r.tenant);
  const tenant = validTenant ? (r.tenant as string) : DEFAULT_KAFKA_TENANT;
  // The type is copied into the task's events and snapshot: a rejected one only while it is a plausible name.
  const typeName =
    typeof r.type === 'string' && r.type.length <= MAX_TYPE_NAME && isWellFormed(r.type) ? r.type : 'unknown';
  const errors = registry.inputErrors(r.type, r.input, r.accepted === true);
  // A tenant given but not valid would put the task where its submitter cannot read it: refused, never replaced.
  if (tenantGiven && !validTenant) {
    errors.push(problem('invalid-field', `/tenant must match ${TENANT_PATTERN}`, { instance: '/tenant' }));
  }
  errors.push(...envelopeErrors(r));
  if (errors.length > 0) return { ok: false, type: typeName, tenant, errors, accepted: r.accepted === true };
  return { ok: true, request: { type: typeName, input: r.input, tenant, accepted: r.accepted === true } };
}

/**
 * What the api's body parser and schema refuse in a request and the type's input schema cannot see: fields it does
 * not know (a `callbackUrl` would otherwise be dropped without a word), the envelope's own types, and text that is
 * no Unicode (a lone surrogate, which would make the task's events unreadable to strict JSON parsers).
 */
function envelopeErrors(r: Record<string, unknown>): ProblemDetail[] {
  const errors: ProblemDetail[] = [];
  for (const field of Object.keys(r)) {
    if (!REQUEST_FIELDS.has(field)) {
      const at = `/${pointerToken(field)}`;
      errors.push(problem('invalid-field', `${at} is not a known field`, { instance: at }));
    }
  }
  if (r.submittedAt !== undefined && typeof r.submittedAt !== 'string') {
    errors.push(problem('invalid-field', '/submittedAt must be a string', { instance: '/submittedAt' }));
  }
  if (r.accepted !== undefined && typeof r.accepted !== 'boolean') {
    errors.push(problem('invalid-field', '/accepted must be a boolean', { instance: '/accepted' }));
  }
  const illFormed = illFormedStringAt(r);
  if (illFormed !== undefined) {
    const detail = `the string at "${illFormed}" has a lone surrogate (\\uD800-\\uDFFF unpaired); it is no text`;
    errors.push(problem('invalid-field', detail, { instance: illFormed }));
  }
  return errors;
}
