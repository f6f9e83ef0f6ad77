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
export const DEFAULT_KAFKA_TENANT = 'kafka';
const TENANT_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** longer than any task type's name may be (task-registry.ts): a rejected request's type is then 'unknown' */
const MAX_TYPE_NAME = 100;

export type ParsedRequest =
  | { ok: true; request: Required<Pick<TaskRequest, 'type' | 'input' | 'tenant' | 'accepted'>> }
  | { ok: false; errors: ProblemDetail[]; type: string; tenant: string };

/** Validates a request as the runner receives it; the same rules POST /tasks applies. */
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
  const typeName = typeof r.type === 'string' && r.type.length <= MAX_TYPE_NAME ? r.type : 'unknown';
  const errors = registry.inputErrors(r.type, r.input, r.accepted === true);
  // A tenant given but not valid would put the task where its submitter cannot read it: refused, never replaced.
  if (tenantGiven && !validTenant) {
    errors.push(problem('invalid-field', `/tenant must match ${TENANT_PATTERN}`, { instance: '/tenant' }));
  }
  if (errors.length > 0) return { ok: false, type: typeName, tenant, errors };
  return { ok: true, request: { type: typeName, input: r.input, tenant, accepted: r.accepted === true } };
}
