import type { Topics } from '../kafka/topics';
import type { ResourceDeclaration } from '../resources/resource-declaration';
import { TASK_EVENT_KINDS, type TaskEventKind } from '../tasks/task-events';
import type { TaskType } from '../tasks/task-type';

/*
 * The AsyncAPI 3.0 document of the topics a user reads or writes, made from this instance's configuration (topic
 * names carry TOPIC_PREFIX) and registries (a team's own task types and resources appear as they register them).
 */
const KAFKA_BINDING = { bindingVersion: '0.5.0' };
const ref = (path: string) => ({ $ref: path });
const camel = (s: string) => s.replace(/[.-](\w)/g, (_, c: string) => c.toUpperCase());

const CLOUD_EVENTS_HEADERS = {
  type: 'object',
  description: 'CloudEvents Kafka protocol binding, binary mode; W3C trace context',
  properties: {
    ce_specversion: { const: '1.0' },
    ce_id: { type: 'string' },
    ce_type: { type: 'string', description: 'the event kind' },
    ce_source: { const: '/hookstream' },
    ce_subject: { type: 'string' },
    ce_time: { type: 'string', format: 'date-time' },
    ce_tenant: { type: 'string', description: "task events: the task's tenant (an extension attribute)" },
    'content-type': { const: 'application/json' },
    traceparent: { type: 'string', pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
  },
  required: ['ce_specversion', 'ce_id', 'ce_type', 'ce_source', 'ce_subject', 'ce_time', 'content-type'],
};

/** A task event's headers: the CloudEvents ones, and always the task's tenant. */
const TASK_EVENT_HEADERS = {
  ...CLOUD_EVENTS_HEADERS,
  required: [...CLOUD_EVENTS_HEADERS.required, 'ce_tenant'],
};

/** What a task request's headers may hold: the api's trace context, and what the runner adds to one it moves. */
const TASK_REQUEST_HEADERS = {
  type: 'object',
  properties: {
    traceparent: {
      ...CLOUD_EVENTS_HEADERS.properties.traceparent,
      description: "W3C trace context: the task's run and events continue this trace",
    },
    'hookstream-moved-from': {
      type: 'string',
      pattern: '^[0-9]+:[0-9]+$',
      description: "written by the runner on a request it moved to its key's partition (<partition>:<offset>)",
    },
    'hookstream-too-large': {
      type: 'string',
      description: 'written by the runner on the stand-in of a request too large to move; leave it out',
    },
  },
};

const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 Problem Details',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
  },
  required: ['type', 'title', 'status'],
};

const TASK_EVENT_DATA: Record<TaskEventKind, object> = {
  'task.accepted': { type: 'object', properties: { input: {} } },
  'task.started': {
    type: 'object',
    properties: { attempt: { type: 'integer', minimum: 1 }, runner: { type: 'string' } },
    required: ['attempt'],
  },
  'task.progress': {
    type: 'object',
    properties: { current: { type: 'number' }, total: { type: 'number' }, message: { type: 'string' } },
    required: ['current', 'total'],
  },
  'task.output': { description: 'what the handler passed to output()' },
  'task.succeeded': { type: 'object', properties: { result: {} } },
  'task.failed': { type: 'object', properties: { problem: PROBLEM }, required: ['problem'] },
  'task.cancelled': { type: 'object' },
};

/** An event in the CloudEvents binding: a JSON object whose `event` is its kind, keyed as `key` says. */
function cloudEventMessage(
  kind: string,
  key: string,
  properties: Record<string, object>,
  required: string[],
  headers = 'cloudEventsHeaders',
): object {
  return {
    name: kind,
    title: kind,
    contentType: 'application/json',
    headers: ref(`#/components/schemas/${headers}`),
    payload: {
      type: 'object',
      properties: { event: { const: kind }, ...properties },
      required: ['event', ...required],
    },
    bindings: { kafka: { key: { type: 'string', description: key }, ...KAFKA_BINDING } },
  };
}

function taskEventMessage(kind: TaskEventKind, taskTypes: string[]): object {
  const properties = {
    taskId: { type: 'string' },
    // A request the runner rejected (an unknown type, a value that is not JSON) still gets its two events.
    type: {
      type: 'string',
      maxLength: 100,
      examples: taskTypes,
      description: `one of ${taskTypes.join(', ')}; for a rejected request, the type it named, or unknown`,
    },
    attempt: { type: 'integer', minimum: 0 },
    time: { type: 'string', format: 'date-time' },
    data: TASK_EVENT_DATA[kind],
  };
  const required = ['taskId', 'type', 'attempt', 'time', 'data'];
  return cloudEventMessage(kind, 'the task id', properties, required, 'taskEventHeaders');
}

function taskRequestMessage(taskTypes: TaskType[]): object {
  return {
    name: 'task.request',
    title: 'A task to run',
    summary: 'Produce one to submit a task from Kafka; the runner validates it as POST /tasks does.',
    contentType: 'application/json',
    headers: ref('#/components/schemas/taskRequestHeaders'),
    payload: {
      oneOf: taskTypes.map((t) => ({
        type: 'object',
        description: t.description,
        properties: {
          type: { const: t.name },
          input: t.inputSchema,
          tenant: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'default kafka' },
          submittedAt: { type: 'string' },
          accepted: { type: 'boolean', description: 'written by the api only: leave it out' },
        },
        required: ['type', 'input'],
        additionalProperties: false,
      })),
    },
    bindings: {
      kafka: {
        key: {
          type: 'string',
          pattern: '^[A-Za-z0-9_-]{1,64}$',
          description:
            'the task id you choose (a UUID names its task in lower case, as a path does); request-<partition>-<offset> ' +
            'is reserved (the id of a request without a valid key)',
        },
        ...KAFKA_BINDING,
      },
    },
  };
}

function domainEventMessage(decl: ResourceDeclaration, change: 'created' | 'updated' | 'deleted'): object {
  const deleted = change === 'deleted';
  const properties = {
    resource: { type: 'string', pattern: `^/${decl.collection}/` },
    id: { type: 'string' },
    ...(deleted ? {} : { data: resourceData(decl) }),
  };
  const required = ['resource', 'id', ...(deleted ? [] : ['data'])];
  return cloudEventMessage(`${decl.name}.${change}`, `${decl.collection}/<id>`, properties, required);
}

/** A resource's data as its events carry it: its fields, and its relations as ids. */
function resourceData(decl: ResourceDeclaration): object {
  const relations = Object.entries(decl.relations).map(([rel, r]) => {
    const id = { type: 'string', description: `the id of one of /${r.collection}` };
    return [rel, r.many ? { type: 'array', items: id } : id] as const;
  });
  return {
    type: 'object',
    properties: { ...decl.properties, ...Object.fromEntries(relations) },
    additionalProperties: false,
  };
}

const DEAD_LETTER = {
  name: 'callback.dead-lettered',
  title: 'A callback that exhausted its attempts',
  contentType: 'application/json',
  payload: {
    type: 'object',
    properties: {
      subscriptionId: { type: 'string' },
      webhookId: { type: 'string' },
      event: { type: 'string' },
      taskId: { type: 'string' },
      body: { type: 'string', description: 'the callback body that was POSTed' },
      traceparent: { type: 'string' },
      attempts: { type: 'integer' },
      lastError: { type: 'string' },
      at: { type: 'string', format: 'date-time' },
    },
    required: ['subscriptionId', 'webhookId', 'event', 'body', 'attempts', 'lastError', 'at'],
  },
  bindings: { kafka: { key: { type: 'string', description: 'the subscription UUID' }, ...KAFKA_BINDING } },
};

export function asyncApiDocument(args: {
  topics: Topics;
  partitions: number;
  taskTypes: TaskType[];
  resources: ResourceDeclaration[];
}): object {
  const typeNames = args.taskTypes.map((t) => t.name);
  const messages: Record<string, object> = {};
  const taskEvents = TASK_EVENT_KINDS.map((k) => camel(k));
  TASK_EVENT_KINDS.forEach((k, i) => (messages[taskEvents[i]] = taskEventMessage(k, typeNames)));
  messages.taskRequest = taskRequestMessage(args.taskTypes);
  const domainEvents = args.resources.flatMap((d) =>
    (['created', 'updated', 'deleted'] as const).map((c) => {
      const id = camel(`${d.name}.${c}`);
      messages[id] = domainEventMessage(d, c);
      return id;
    }),
  );
  messages.callbackDeadLettered = DEAD_LETTER;
  const channel = (address: string, ids: string[], description: string) => ({
    address,
    description,
    messages: Object.fromEntries(ids.map((id) => [id, ref(`#/components/messages/${id}`)])),
    bindings: { kafka: { topic: address, partitions: args.partitions, ...KAFKA_BINDING } },
  });
  const operation = (action: 'send' | 'receive', channelId: string, ids: string[], summary: string) => ({
    action,
    summary,
    channel: ref(`#/channels/${channelId}`),
    messages: ids.map((id) => ref(`#/channels/${channelId}/messages/${id}`)),
  });
  const committed = 'Read with isolation.level=read_committed: every record is written in a Kafka transaction.';
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'hookstream topics',
      version: '1.0.0',
      description:
        'The Kafka topics of a hookstream instance that its users read and write. ' +
        "Topic names carry this instance's TOPIC_PREFIX.",
    },
    defaultContentType: 'application/json',
    channels: {
      taskEvents: channel(
        args.topics.taskEvents,
        taskEvents,
        `Each task's events in order, keyed by task id (one partition per task). ${committed}`,
      ),
      taskRequests: channel(args.topics.taskRequests, ['taskRequest'], 'Tasks to run, keyed by task id.'),
      domainEvents: channel(
        args.topics.domainEvents,
        domainEvents,
        `Changes of resources, keyed by <collection>/<id>. ${committed}`,
      ),
      callbackDeadLetters: channel(
        args.topics.callbackDeadLetters,
        ['callbackDeadLettered'],
        `Callbacks that exhausted their attempts, keyed by subscription. ${committed}`,
      ),
    },
    operations: {
      readTaskEvents: operation('receive', 'taskEvents', taskEvents, 'Follow tasks from the position a 202 names.'),
      submitTask: operation('send', 'taskRequests', ['taskRequest'], 'Submit a task from Kafka.'),
      readDomainEvents: operation('receive', 'domainEvents', domainEvents, 'Follow changes of resources.'),
      readDeadLetters: operation('receive', 'callbackDeadLetters', ['callbackDeadLettered'], 'Inspect dead letters.'),
    },
    components: {
      schemas: {
        cloudEventsHeaders: CLOUD_EVENTS_HEADERS,
        taskEventHeaders: TASK_EVENT_HEADERS,
        taskRequestHeaders: TASK_REQUEST_HEADERS,
      },
      messages,
    },
  };
}
