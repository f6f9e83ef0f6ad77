import { halSchema, type Schema } from '../http/hal-schemas';
import { TASK_EVENT_KINDS } from './task-events';

/** A record somebody else's producer wrote under a task's key: its page lists it all the same (task-event-routes). */
const FOREIGN_KIND = "a record some other producer wrote under the task's key has its own";
const FOREIGN_RECORD = "a record under the task's key that is no JSON object (not ours): its text";

const taskEvent: Schema = {
  type: 'object',
  description: 'A record of the task-events topic: its coordinate, then its JSON value as a Kafka client reads it.',
  properties: {
    id: { type: 'string', description: '<partition>:<offset>, a cursor for `after` and Last-Event-ID' },
    partition: { type: 'integer', minimum: 0 },
    offset: { type: 'integer', minimum: 0 },
    event: {
      type: 'string',
      description: `${TASK_EVENT_KINDS.join(', ')}; ${FOREIGN_KIND}`,
      examples: [...TASK_EVENT_KINDS],
    },
    taskId: { type: 'string' },
    type: { type: 'string' },
    attempt: { type: 'integer', minimum: 0 },
    time: { type: 'string', format: 'date-time' },
    data: { description: 'per kind; see the AsyncAPI document at /asyncapi.json' },
    value: { type: 'string', description: FOREIGN_RECORD },
  },
  required: ['id', 'partition', 'offset', 'event'],
};

export const taskEventPageSchema = halSchema({
  description: "The task's events so far, from the cursor on; follow next for more.",
  properties: {
    count: { type: 'integer', minimum: 0 },
    complete: { type: 'boolean', description: 'true once the final event has been listed' },
    events: { type: 'array', items: taskEvent },
  },
  links: { self: 'one', task: 'one', next: 'one' },
});
