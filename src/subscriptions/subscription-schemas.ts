import type { FromSchema } from 'json-schema-to-ts';
import { halListSchema, halResponse, halSchema, LOCATION_HEADER, ref, type Schema } from '../http/hal-schemas';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../http/idempotency';
import { pageQuerySchema } from '../http/paging';
import { problemResponse } from '../http/route-schema-conventions';
import { SUBSCRIPTION_SCHEMA_ID } from '../tasks/task-schemas';

const dateTime: Schema = { type: 'string', format: 'date-time' };

/** One callback attempt, as the bridge recorded it. */
const deliveryAttempt: Schema = {
  type: 'object',
  properties: {
    subscriptionId: { type: 'string' },
    webhookId: { type: 'string', description: 'the same for every attempt of one event to one subscription' },
    event: { type: 'string' },
    taskId: { type: 'string' },
    attempt: { type: 'integer', minimum: 1 },
    at: dateTime,
    outcome: { enum: ['delivered', 'refused', 'gone', 'failed', 'dead-lettered'] },
    statusCode: { type: 'integer' },
    latencyMs: { type: 'number', minimum: 0 },
    error: { type: 'string' },
    nextAttemptAt: { ...dateTime, description: 'when a failed attempt is tried again' },
  },
  required: ['subscriptionId', 'webhookId', 'event', 'attempt', 'at', 'outcome', 'latencyMs'],
  additionalProperties: false,
};

/** The subscription resource (subscriptionRepresentation); `secret` only in the answer that creates it. */
export const subscriptionSchema = halSchema({
  $id: SUBSCRIPTION_SCHEMA_ID,
  description: 'A subscription: where callbacks go, and how they went.',
  properties: {
    UUID: { type: 'string', description: 'the subscription id' },
    message: { type: 'string' },
    status: { enum: ['active', 'cancelled'] },
    cancelReason: { enum: ['requested', 'delivered-once', 'refused', 'gone', 'dead-lettered'] },
    mode: { enum: ['once', 'continuous'] },
    callbackUrl: { type: 'string' },
    taskId: { type: 'string', description: 'the task subscribed to…' },
    events: { type: 'array', items: { type: 'string' }, description: '…or the event kinds' },
    secret: {
      type: 'string',
      pattern: '^whsec_',
      description: 'signs the callbacks (Standard Webhooks); shown only when the subscription is created',
    },
    counts: {
      type: 'object',
      properties: Object.fromEntries(
        ['attempts', 'delivered', 'failed', 'deadLettered', 'refused', 'gone'].map((c) => [
          c,
          { type: 'integer', minimum: 0 },
        ]),
      ),
      additionalProperties: false,
    },
    lastDelivery: deliveryAttempt,
    createdAt: dateTime,
    updatedAt: dateTime,
    expiresAt: {
      ...dateTime,
      description: 'when a cancelled subscription and its history are forgotten (TASK_RETENTION_MS after it ended)',
    },
  },
  links: { self: 'one', deliveries: 'one', collection: 'one', task: 'one' },
});

const NEW_SUBSCRIPTION = {
  type: 'object',
  properties: {
    callbackUrl: { type: 'string', minLength: 1, maxLength: 2048, description: 'absolute http(s), public address' },
    mode: { enum: ['once', 'continuous'], description: 'once: one accepted callback, then cancelled' },
    taskId: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: "one task's events from its first (once: its outcome), also when it finished before",
    },
    // The event kinds are the running API's (newSubscriptionSchema): any string, for the type.
    events: { type: 'array', minItems: 1, maxItems: 50, uniqueItems: true, items: { type: 'string' } },
  },
  required: ['callbackUrl', 'mode'],
  additionalProperties: false,
} as const;

/** The body of POST /subscriptions, typed from its schema: what a handler holds once the body is valid. */
export type NewSubscriptionBody = FromSchema<typeof NEW_SUBSCRIPTION>;

/** POST /subscriptions: `events` may name any event kind the API publishes. */
export function newSubscriptionSchema(eventKinds: string[]): Schema {
  const events = { ...NEW_SUBSCRIPTION.properties.events, items: { enum: eventKinds } };
  return {
    ...NEW_SUBSCRIPTION,
    properties: { ...NEW_SUBSCRIPTION.properties, events },
    description: 'A callback subscription: to one task (taskId) or to event kinds (events), exactly one of them.',
    examples: [
      { callbackUrl: 'https://example.com/hooks', mode: 'continuous', events: ['order.created', 'task.failed'] },
    ],
  };
}

const ID_PARAMS: Schema = {
  type: 'object',
  properties: { id: { type: 'string', description: "the subscription's UUID" } },
};
const notFound = problemResponse('not-found: no such subscription of yours.');
const tags = ['subscriptions'];

export function subscriptionRouteSchemas(eventKinds: string[]) {
  return {
    create: {
      tags,
      summary: 'Subscribe a callbackUrl',
      operationId: 'createSubscription',
      headers: { type: 'object', properties: { 'idempotency-key': IDEMPOTENCY_KEY_HEADER } },
      body: newSubscriptionSchema(eventKinds),
      response: {
        201: halResponse('Created, with its secret (shown only now)', ref(SUBSCRIPTION_SCHEMA_ID), {
          headers: { Location: LOCATION_HEADER, 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
        }),
        403: problemResponse(
          'subscription-rejected: the callbackUrl is not absolute http(s), carries credentials, ' +
            'or targets a private, loopback or reserved address (errors[] names /callbackUrl).',
        ),
        409: problemResponse('idempotency-key-in-flight.'),
        410: problemResponse("task-events-deleted: Kafka has deleted the task's first events (retention)."),
        422: problemResponse('idempotency-key-reused.'),
      },
    },
    list: {
      tags,
      summary: 'List your subscriptions',
      operationId: 'listSubscriptions',
      querystring: pageQuerySchema,
      response: {
        200: halResponse(
          'A page of subscriptions',
          halListSchema('subscriptions', ref(SUBSCRIPTION_SCHEMA_ID), 'A page of your subscriptions.'),
        ),
        400: problemResponse('validation-failed: a paging value is invalid.'),
      },
    },
    get: {
      tags,
      summary: 'A subscription, with its delivery counts',
      operationId: 'getSubscription',
      params: ID_PARAMS,
      response: { 200: halResponse('The subscription', ref(SUBSCRIPTION_SCHEMA_ID)), 404: notFound },
    },
    deliveries: {
      tags,
      summary: 'The callback attempts of a subscription',
      operationId: 'listDeliveries',
      params: ID_PARAMS,
      querystring: pageQuerySchema,
      response: {
        200: halResponse(
          'A page of attempts, oldest first',
          halSchema({
            properties: {
              count: { type: 'integer', minimum: 0 },
              total: { type: 'integer', minimum: 0 },
              attempts: { type: 'array', items: deliveryAttempt },
            },
            links: { self: 'one', next: 'one', prev: 'one', subscription: 'one' },
          }),
        ),
        400: problemResponse('validation-failed: a paging value is invalid.'),
        404: notFound,
      },
    },
    cancel: {
      tags,
      summary: 'Cancel a subscription',
      operationId: 'cancelSubscription',
      description:
        'Spec: cancelling is a PUT on the subscription. Repeatable. The body is optional; a UUID in it must ' +
        'be the path\'s (403 otherwise), a status in it "cancelled"; any other member is a 400.',
      params: ID_PARAMS,
      body: {
        description: 'Optional.',
        anyOf: [
          { type: 'object', properties: { UUID: { description: 'when given, the UUID of the path' } } },
          { type: 'null' },
        ],
        examples: [{ UUID: '2b4c1e9a-5d3f-4a6b-8c7d-9e0f1a2b3c4d' }],
      },
      response: {
        202: halResponse(
          'Cancelled: no further callbacks start. The subscription as it now is',
          ref(SUBSCRIPTION_SCHEMA_ID),
        ),
        403: problemResponse('uuid-mismatch: the body names another subscription.'),
        404: notFound,
      },
    },
  };
}
