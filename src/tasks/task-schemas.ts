import type { FromSchema } from 'json-schema-to-ts';
import { JSON_BODY_TYPES, MERGE_PATCH_MEDIA_TYPE } from '../http/content-negotiation';
import {
  emptyResponse,
  halListSchema,
  halResponse,
  halSchema,
  LOCATION_HEADER,
  ref,
  type Schema,
} from '../http/hal-schemas';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../http/idempotency';
import { pageQuerySchema } from '../http/paging';
import { PREFER_HEADER, PREFERENCE_APPLIED_HEADER } from '../http/prefer';
import { problemResponse } from '../http/route-schema-conventions';
import { TASK_STATUSES } from './task-snapshot';

/** Shared schema ids: components of the OpenAPI document. */
export const TASK_SCHEMA_ID = 'Task';
export const TASK_TYPE_SCHEMA_ID = 'TaskType';
/** The subscription a task embeds; the subscriptions module declares it. */
export const SUBSCRIPTION_SCHEMA_ID = 'Subscription';

const dateTime = (description?: string): Schema => ({
  type: 'string',
  format: 'date-time',
  ...(description ? { description } : {}),
});

/** The task-tracking resource (taskRepresentation). */
export const taskSchema = halSchema({
  $id: TASK_SCHEMA_ID,
  description: "The task-tracking resource: where the task's events are on Kafka, and its state.",
  properties: {
    UUID: { type: 'string', description: 'the task id' },
    taskId: { type: 'string', description: 'the key of its events' },
    type: { type: 'string', description: 'the task type (see /task-types)' },
    status: { type: 'string', enum: [...TASK_STATUSES] },
    message: { type: 'string' },
    topic: { type: 'string', description: 'the topic of its events' },
    key: { type: 'string', description: 'the Kafka key of its events: the task id' },
    partition: { type: 'integer', minimum: 0, description: 'the partition of its events' },
    offset: { type: 'integer', minimum: 0, description: 'the offset of its first event, task.accepted' },
    attempt: { type: 'integer', minimum: 0, description: 'the run: 1 on the first, higher after a runner died' },
    cancelRequested: { type: 'boolean', description: 'present while a cancellation is on its way' },
    progress: {
      type: 'object',
      properties: { current: { type: 'number' }, total: { type: 'number' }, message: { type: 'string' } },
      required: ['current', 'total'],
      additionalProperties: false,
    },
    result: { description: 'what the handler returned (succeeded)' },
    problem: {
      type: 'object',
      description:
        'why it failed (failed): Problem Details of type task-failed, task-timed-out or ' +
        'task-request-invalid, or of a type the task type chose',
      properties: {
        type: { type: 'string' },
        title: { type: 'string' },
        status: { type: 'integer' },
        detail: { type: 'string' },
      },
      required: ['type', 'title'],
    },
    createdAt: dateTime(),
    startedAt: dateTime(),
    finishedAt: dateTime(),
    expiresAt: dateTime('when a finished task is forgotten (finishedAt + TASK_RETENTION_MS): 404 after it'),
    updatedAt: dateTime(),
  },
  links: { self: 'one', collection: 'one', events: 'one', subscription: 'one' },
  embedded: { subscription: ref(SUBSCRIPTION_SCHEMA_ID) },
});

export const taskListSchema = halListSchema('tasks', ref(TASK_SCHEMA_ID), 'A page of your tasks, newest last.');

export const TASK_EXAMPLE = {
  _links: {
    self: { href: '/tasks/5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10' },
    collection: { href: '/tasks' },
    events: { href: '/tasks/5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10/events' },
  },
  UUID: '5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10',
  taskId: '5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10',
  type: 'countdown',
  status: 'accepted',
  message:
    'The task is accepted and waits for a runner. Events: topic hookstream.task-events, ' +
    'key 5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10, from partition 2 offset 41.',
  topic: 'hookstream.task-events',
  key: '5f0c6a5e-3c1d-4b8e-9d0a-2f6b7c8d9e10',
  partition: 2,
  offset: 41,
  attempt: 0,
  createdAt: '2026-11-24T10:00:00.000Z',
  updatedAt: '2026-11-24T10:00:00.000Z',
};

const SUBMISSION = {
  type: 'object',
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 100 },
    input: { description: "the task type's input" },
    callbackUrl: { type: 'string', minLength: 1, maxLength: 2048, description: 'absolute http(s), public address' },
    mode: { enum: ['once', 'continuous'], description: 'of the callback subscription; default once' },
  },
  required: ['type', 'input'],
  additionalProperties: false,
} as const;

/** The body of POST /tasks, typed from its schema: what a handler holds once the body is valid. */
export type TaskSubmission = FromSchema<typeof SUBMISSION>;

/** POST /tasks. Which `type`s exist and what their `input` must be is the registry's (see /task-types). */
export function submissionSchema(typeNames: string[]): Schema {
  return {
    ...SUBMISSION,
    description:
      `A task to run. \`type\` is one of: ${typeNames.join(', ')}; \`input\` must match that type's ` +
      "inputSchema (GET /task-types/{name}). A callbackUrl subscribes to the task's events.",
    examples: [{ type: 'countdown', input: { steps: 3, stepMs: 200 } }],
  };
}

/** The tracking resource's fields but its status: the server's only, so a PATCH that sends them back drops them. */
const serverSetFields = Object.fromEntries(
  Object.keys(taskSchema.properties as object)
    .filter((name) => name !== 'status')
    .map((name) => [name, { description: 'as GET gave it: set by the server, not changed here' }]),
);

export const statusPatchSchema: Schema = {
  type: 'object',
  description:
    'The only change a task accepts: cancelling it. The representation GET gave may be sent back with its status ' +
    "edited: its other fields are the server's and are dropped, but an id or link naming anything else, or a " +
    'field that never changes (type, topic, partition, offset) sent changed, is 400.',
  properties: { ...serverSetFields, status: { const: 'cancelled' } },
  required: ['status'],
  additionalProperties: false,
  examples: [{ status: 'cancelled' }],
};

/** A declared task type (GET /task-types). */
export const taskTypeSchema = halSchema({
  $id: TASK_TYPE_SCHEMA_ID,
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    inputSchema: { type: 'object', description: 'the JSON Schema `input` must match' },
  },
  links: { self: 'one', collection: 'one', tasks: 'one' },
});

export const taskTypeListSchema = halSchema({
  description: 'Every task type POST /tasks accepts.',
  properties: { count: { type: 'integer', minimum: 0 }, total: { type: 'integer', minimum: 0 } },
  links: { self: 'one', item: 'many' },
  embedded: { 'task-types': { type: 'array', items: ref(TASK_TYPE_SCHEMA_ID) } },
});

export const TASK_ID_PARAMS: Schema = {
  type: 'object',
  properties: { taskId: { type: 'string', description: 'the task id (UUID of the tracking resource)' } },
};

const RETRY_AFTER: Schema = { type: 'string', description: 'seconds until it is worth asking again (task not final)' };
const TASK_ANSWER_HEADERS: Record<string, Schema> = {
  'Retry-After': RETRY_AFTER,
  'Preference-Applied': PREFERENCE_APPLIED_HEADER,
};
export const taskNotFound = problemResponse(
  "not-found: no such task of yours (another tenant's tasks are not " + 'found either).',
);

/** The route schemas of the tasks routes: what each takes and answers, for validation and the OpenAPI document. */
export function taskRouteSchemas(typeNames: string[]) {
  const tags = ['tasks'];
  return {
    submit: {
      tags,
      summary: 'Submit a task',
      operationId: 'submitTask',
      description:
        'Answers 202 with the tracking resource once the task is durably in Kafka. With Prefer: wait=N ' +
        'the answer is held until the task is final (or N s passed), still 202, then with its result.',
      headers: { type: 'object', properties: { 'idempotency-key': IDEMPOTENCY_KEY_HEADER, prefer: PREFER_HEADER } },
      body: submissionSchema(typeNames),
      response: {
        202: halResponse(
          'Accepted: the tracking resource (with _embedded.subscription and its secret, once, when ' +
            'a callbackUrl was given)',
          ref(TASK_SCHEMA_ID),
          {
            headers: {
              Location: LOCATION_HEADER,
              ...TASK_ANSWER_HEADERS,
              'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER,
            },
            example: TASK_EXAMPLE,
          },
        ),
        403: problemResponse('subscription-rejected: the callbackUrl is not allowed (errors[] names /callbackUrl).'),
        409: problemResponse(
          'idempotency-key-in-flight: the first request with this key is still writing what it creates.',
        ),
        422: problemResponse('idempotency-key-reused: this key was used for another request.'),
      },
    },
    list: {
      tags,
      summary: 'List your tasks',
      operationId: 'listTasks',
      querystring: {
        ...pageQuerySchema,
        properties: {
          ...pageQuerySchema.properties,
          type: { type: 'string', maxLength: 100, description: 'only tasks of this type' },
          status: { enum: [...TASK_STATUSES], description: 'only tasks in this status' },
        },
      },
      response: {
        200: halResponse('A page of tasks', taskListSchema),
        400: problemResponse('validation-failed: a paging or filter value is invalid.'),
      },
    },
    get: {
      tags,
      summary: 'The tracking resource',
      operationId: 'getTask',
      description: 'With Prefer: wait=N, answers as soon as the task is final, or after N s with its current state.',
      params: TASK_ID_PARAMS,
      headers: { type: 'object', properties: { prefer: PREFER_HEADER } },
      response: {
        200: halResponse('The task', ref(TASK_SCHEMA_ID), { headers: TASK_ANSWER_HEADERS, example: TASK_EXAMPLE }),
        404: taskNotFound,
      },
    },
    cancel: {
      tags,
      summary: 'Cancel a task',
      operationId: 'cancelTask',
      description: 'A status update, so a PATCH. 202: the runner aborts the task and publishes task.cancelled.',
      params: TASK_ID_PARAMS,
      consumes: [...JSON_BODY_TYPES, MERGE_PATCH_MEDIA_TYPE],
      body: statusPatchSchema,
      response: {
        202: halResponse('Cancellation requested', ref(TASK_SCHEMA_ID), { headers: { 'Retry-After': RETRY_AFTER } }),
        404: taskNotFound,
        409: problemResponse('task-already-finished: a finished task cannot be cancelled.'),
      },
    },
    forget: {
      tags,
      summary: 'Forget a finished task',
      operationId: 'deleteTask',
      params: TASK_ID_PARAMS,
      response: {
        204: emptyResponse('Forgotten: from now on 404'),
        404: taskNotFound,
        409: problemResponse('task-not-finished: cancel it first (PATCH).'),
      },
    },
  };
}

/** GET /task-types and GET /task-types/{name}: public, like the root. */
export const taskTypeRouteSchemas = {
  list: {
    tags: ['task types'],
    summary: 'The task types',
    operationId: 'listTaskTypes',
    response: { 200: halResponse('Every declared task type, with its input schema', taskTypeListSchema) },
  },
  get: {
    tags: ['task types'],
    summary: 'One task type',
    operationId: 'getTaskType',
    params: { type: 'object', properties: { name: { type: 'string', description: "the task type's name" } } },
    response: {
      200: halResponse('The task type', ref(TASK_TYPE_SCHEMA_ID)),
      404: problemResponse('not-found: no such task type.'),
    },
  },
};
