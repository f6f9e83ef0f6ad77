import { randomUUID } from 'node:crypto';
import type { Headers, OutgoingRecord } from '../kafka/types';
import { traceHeaders, type TraceContext } from '../tracing/trace-context';
import { isoNow } from '../lib/iso-now';

export const EVENT_SOURCE = '/hookstream';

/**
 * A record in the CloudEvents Kafka protocol binding, binary mode: the event's
 * attributes are `ce_` headers, the value is the event data as JSON. Written
 * inside a span, it carries a W3C `traceparent` header as well.
 */
export function cloudEventRecord(args: {
  topic: string;
  key: string;
  type: string;
  subject: string;
  data: unknown;
  id?: string;
  time?: string;
  /** CloudEvents extension attributes, sent as `ce_<name>` headers */
  extensions?: Record<string, string>;
  /** the span the event is written in (an HTTP request's, a task run's): the record names it as its parent */
  trace?: TraceContext;
}): OutgoingRecord {
  const headers: Headers = {
    ce_specversion: '1.0',
    ce_id: args.id ?? randomUUID(),
    ce_type: args.type,
    ce_source: EVENT_SOURCE,
    ce_subject: args.subject,
    ce_time: args.time ?? isoNow(),
  };
  // Added one by one, in the order they always had: an accepted task builds one of these per request.
  for (const [name, value] of Object.entries(args.extensions ?? {})) headers[`ce_${name}`] = value;
  headers['content-type'] = 'application/json';
  const { traceparent } = traceHeaders(args.trace);
  if (traceparent !== undefined) headers.traceparent = traceparent;
  return { topic: args.topic, key: args.key, value: JSON.stringify(args.data), headers };
}
