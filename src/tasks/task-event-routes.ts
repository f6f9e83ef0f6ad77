import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingHttpHeaders } from 'node:http';
import { tenantOf } from '../http/auth';
import { acceptQuality, halQuality } from '../http/content-negotiation';
import { HAL_MEDIA_TYPE, halResource, link } from '../http/hal';
import { emptyResponse, type Schema } from '../http/hal-schemas';
import { MAX_PAGE_SIZE, pageLink } from '../http/paging';
import { problemResponse } from '../http/route-schema-conventions';
import { problem } from '../problems/problem-detail';
import { ProblemError } from '../problems/problem-error';
import { RecordsDeletedError, type PartitionReader } from '../kafka/types';
import type { Logger } from '../logger';
import {
  COORDINATE_PATTERN,
  coordinate,
  parseCoordinate,
  readTaskEventPage,
  type ReadTaskEvent,
} from './task-event-page';
import { EVENT_STREAM_HEAD, TaskEventStream } from './task-event-stream';
import { OpenEventStreams } from './open-event-streams';
import { taskEventPageSchema } from './task-event-schemas';
import { TASK_ID_PARAMS, taskNotFound } from './task-schemas';
import { isFinal, type TaskSnapshot } from './task-snapshot';
import type { TaskStore } from './task-store';
import { addVary } from '../http/vary';

export const EVENT_STREAM_MEDIA_TYPE = 'text/event-stream';

export interface TaskEventRouteDeps {
  store: TaskStore;
  ownTask(tenant: string, taskId: string): TaskSnapshot;
  reader: PartitionReader;
  timeoutMs: number;
  heartbeatMs: number;
  logger: Logger;
}

/** GET /tasks/{taskId}/events: HAL pages of the task's events, or Server-Sent Events. */
function eventsRouteSchema(): Schema {
  const cursor = 'the id of an event (<partition>:<offset>): only later events come';
  return {
    tags: ['tasks'],
    operationId: 'getTaskEvents',
    summary: "The task's events: a HAL page, or a Server-Sent Events stream",
    description:
      'With Accept: text/event-stream, the events as Server-Sent Events (id: <partition>:<offset>, event: ' +
      "its kind, data: the record's JSON value); the stream ends after the final event. Resume with Last-Event-ID " +
      'or ?after= (with both, the later one). Any api instance serves any stream. Otherwise a HAL page of the events so far.',
    params: TASK_ID_PARAMS,
    querystring: {
      type: 'object',
      properties: {
        after: { type: 'string', pattern: COORDINATE_PATTERN, description: cursor },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_PAGE_SIZE,
          default: 20,
          description: 'events per HAL page (a stream sends every event; the value is checked all the same)',
        },
      },
    },
    headers: { type: 'object', properties: { 'last-event-id': { type: 'string', description: cursor } } },
    response: {
      200: {
        description: 'The events after the cursor',
        content: {
          [HAL_MEDIA_TYPE]: { schema: taskEventPageSchema },
          [EVENT_STREAM_MEDIA_TYPE]: {
            schema: { type: 'string', description: 'text/event-stream; `: heartbeat` comments while waiting' },
          },
        },
      },
      204: emptyResponse('Nothing after the cursor of a finished task: an EventSource stops reconnecting'),
      400: problemResponse('validation-failed: the cursor is not an event id of this task, or limit is invalid.'),
      404: taskNotFound,
      410: problemResponse(
        "task-events-deleted: Kafka has deleted the task's events from the cursor on (the topic's retention); " +
          '`resumeAfter` is the cursor for what is left.',
      ),
    },
  };
}

/**
 * Events the topic's retention (or a records deletion) removed are a gap a page or stream must not pass over in
 * silence: a page would end `complete` without them, and a Kafka client reading from the task's offset waits for
 * ever. The answer names where the partition starts now, for a client that wants what is left.
 */
function deletedEvents(err: unknown, task: TaskSnapshot): unknown {
  if (!(err instanceof RecordsDeletedError)) return err;
  const first = coordinate(task.partition, err.firstOffset);
  const detail =
    `Kafka has deleted the events of ${task.topic} partition ${task.partition} before offset ${err.firstOffset} ` +
    `(the topic's retention), and with them some or all of this task's from the cursor on. ${first} is the first ` +
    `record left; resumeAfter is the cursor for the rest.`;
  return new ProblemError('task-events-deleted', detail, {
    extensions: { resumeAfter: coordinate(task.partition, err.firstOffset - 1n) },
  });
}

/** where a cursor given as the Last-Event-ID header is reported (and told apart from `?after=`) */
const LAST_EVENT_ID = '/headers/last-event-id';

type EventsRequest = { Params: { taskId: string }; Querystring: { after?: string; limit: number } };

/**
 * SSE when the client prefers it to HAL JSON by its q-values (`text/*` alone asks for it); on a tie, only when it
 * names it: `*\/*` (and no Accept) gets HAL JSON, the default.
 */
function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  const sse = acceptQuality(accept, EVENT_STREAM_MEDIA_TYPE);
  if (sse.q === 0) return false;
  // Weighed as the 406 check weighs it: `application/hal+json;q=0, *\/*;q=0.1` refuses the page and takes the stream.
  const hal = halQuality(accept);
  if (sse.q !== hal.q) return sse.q > hal.q;
  return sse.specificity === 2;
}

/**
 * HEAD of the stream: GET's status and head, never a stream. GET answers 204 when a task that had ended has no event
 * after the cursor, which one event's page tells. The head goes out raw: Fastify would add `Content-Length: 0`, which
 * RFC 9110 §8.6 forbids on a 204, and which on a 200 would misstate GET's body (a stream, never empty).
 */
async function eventStreamHead(deps: TaskEventRouteDeps, reply: FastifyReply, task: TaskSnapshot, from: bigint) {
  const page = isFinal(task.status) ? await readTaskEventPage(deps, task, from, 1) : undefined;
  // As GET decides it: 204 only when nothing can follow the cursor, not while an open transaction hides the rest.
  const ended = page !== undefined && page.events.length === 0 && page.settled;
  const headers = reply.getHeaders() as OutgoingHttpHeaders;
  reply.hijack();
  reply.raw.writeHead(ended ? 204 : 200, ended ? headers : { ...headers, ...EVENT_STREAM_HEAD });
  reply.raw.end();
  return reply;
}

/**
 * Where to resume: after `Last-Event-ID` (what EventSource sends on reconnect)
 * or `?after=`, both `<partition>:<offset>`; from the task's first event
 * otherwise. With both, the later one: an EventSource keeps its URL, `?after=`
 * included, when it reconnects, and adds the id it saw last, so the earlier
 * cursor would send events again. A cursor before the first event starts at
 * the first event.
 */
function resumeOffset(request: FastifyRequest<EventsRequest>, task: TaskSnapshot): { from: bigint; where?: string } {
  const header = request.headers['last-event-id'];
  const cursors = [
    { given: request.query.after, where: '/querystring/after' },
    {
      given: typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined,
      where: LAST_EVENT_ID,
    },
  ];
  let from = BigInt(task.offset);
  let by: string | undefined;
  for (const { given, where } of cursors) {
    if (given === undefined) continue;
    const cursor = parseCoordinate(given);
    if (!cursor || cursor.partition !== task.partition) {
      const detail = `The cursor must be an event id of this task: ${task.partition}:<offset>.`;
      throw new ProblemError('validation-failed', detail, {
        errors: [problem('invalid-field', `${where} must be ${task.partition}:<offset>`, { instance: where })],
      });
    }
    if (cursor.offset + 1n > from) {
      from = cursor.offset + 1n;
      by = where;
    }
  }
  return { from, where: by };
}

/**
 * A cursor at or past the partition's end is no event of this task: a stream resumed from it would wait for ever,
 * since the task's later events (its final one too) land before it. Checked only when a cursor moved the start.
 */
async function refuseCursorPastEnd(
  deps: TaskEventRouteDeps,
  task: TaskSnapshot,
  { from, where }: ReturnType<typeof resumeOffset>,
): Promise<void> {
  if (where === undefined) return;
  const end = BigInt(await deps.reader.endOffset(task.topic, task.partition, deps.timeoutMs));
  if (from <= end) return;
  const detail = `The cursor must be an event id of this task; ${task.partition}:${from - 1n} is past its partition's end.`;
  throw new ProblemError('validation-failed', detail, {
    errors: [problem('invalid-field', `${where} must be before ${task.partition}:${end}`, { instance: where })],
  });
}

/**
 * `GET /tasks/{id}/events`: the task's events, read straight from its
 * partition from a known offset, so any api instance serves any task's stream
 * and a client resumes anywhere without loss or repeat.
 */
export async function taskEventRoutes(app: FastifyInstance, deps: TaskEventRouteDeps): Promise<void> {
  const streams = new OpenEventStreams();
  app.addHook('preClose', async () => streams.endAll());

  app.get<EventsRequest>(
    '/tasks/:taskId/events',
    {
      config: { produces: [EVENT_STREAM_MEDIA_TYPE] },
      schema: eventsRouteSchema(),
    },
    async (request, reply) => {
      const task = deps.ownTask(tenantOf(request), request.params.taskId);
      return serveEvents(deps, streams, request, reply, task).catch((err: unknown) => {
        throw deletedEvents(err, task);
      });
    },
  );
}

/** Resolves once the view shows the task ended or forgotten, or when `signal` aborts: a stream waits for it. */
async function untilTaskEnded(store: TaskStore, taskId: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    // awaitFinal gives up after its timeout: a stream may outlive any one of them.
    const task = await store.awaitFinal(taskId, 2 ** 31 - 1, signal);
    if (!task || isFinal(task.status)) return;
  }
}

/** One request of the events route: its stream or its page, from the cursor. */
async function serveEvents(
  deps: TaskEventRouteDeps,
  streams: OpenEventStreams,
  request: FastifyRequest<EventsRequest>,
  reply: FastifyReply,
  task: TaskSnapshot,
) {
  const resume = resumeOffset(request, task);
  await refuseCursorPastEnd(deps, task, resume);
  const { from } = resume;
  const self = `/tasks/${task.taskId}/events`;
  // One URL, two representations, and Last-Event-ID moves where a page starts: a cache must key on both.
  addVary(reply, 'Accept');
  addVary(reply, 'Last-Event-ID');
  if (wantsEventStream(request)) {
    if (request.method === 'HEAD') return eventStreamHead(deps, reply, task, from);
    // The stream writes its own head: the headers the conventions set (X-Request-Id, traceparent) go with it.
    const untilEnded = (taskId: string, signal: AbortSignal) => untilTaskEnded(deps.store, taskId, signal);
    const headers = reply.getHeaders() as OutgoingHttpHeaders;
    const stream = new TaskEventStream({ ...deps, untilEnded }, task, reply.raw, headers);
    const opened = await stream.open(from, isFinal(task.status));
    // Nothing after the cursor of a finished task: 204 stops an EventSource from reconnecting for ever.
    if ('nothing' in opened) return reply.code(204).send();
    // Taken over either way: a stream answers on its own, and a client that left gets no answer at all.
    reply.hijack();
    if ('gone' in opened) return reply;
    streams.add(stream, opened.served);
    return reply;
  }
  const { limit } = request.query;
  const { events, more, settled } = await readTaskEventPage(deps, task, from, limit);
  // `self` names the page served: a page that Last-Event-ID started names that cursor as `after`.
  const cursor = resume.where === LAST_EVENT_ID ? `${task.partition}:${from - 1n}` : request.query.after;
  const after = cursor ? `after=${cursor}&` : '';
  const links: Record<string, { href: string }> = {
    self: link(`${self}?${after}limit=${limit}`),
    task: link(`/tasks/${task.taskId}`),
  };
  const last = events.at(-1);
  if (more && last) links.next = pageLink(`${self}?after=${last.id}&limit=${limit}`);
  return halResource(
    {
      count: events.length,
      // Nothing follows: the page holds the final event, or the task had ended and its partition was read past every
      // record written before the request (an open transaction can keep some of them unreadable for a while).
      complete: (last?.final ?? false) || (!more && isFinal(task.status) && settled),
      events: events.map(pageEvent),
    },
    links,
  );
}

/**
 * An event as a page lists it: the record's JSON value with its coordinates, which a value's own `id`, `partition`
 * or `offset` never hide (they are the cursor). A record with the task's key that some other producer wrote, and that
 * is no JSON object, is listed as its text under `value`, as the stream sends it: one such record must not make the
 * task's every page fail.
 */
function pageEvent(e: ReadTaskEvent): Record<string, unknown> {
  const at = { id: e.id, partition: e.partition, offset: Number(e.offset) };
  let value: unknown;
  try {
    value = JSON.parse(e.value);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ...at, event: e.kind, value: e.value };
  // Key order: the coordinates first; values: the coordinates over the value's own. Spread, not Object.assign: a
  // member named __proto__ is then a member, not the object's prototype.
  return { ...at, ...value, ...at };
}
