import { randomHex } from '../lib/random-hex';

/** A W3C Trace Context position: the trace, and the span that a child's `traceparent` names as its parent. */
export interface TraceContext {
  traceId: string;
  spanId: string;
  /** trace-flags, two hex digits (01: sampled) */
  flags: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A version-00 `traceparent`, or undefined for anything else (all-zero ids are invalid, per the spec). */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  const m = header === undefined ? null : TRACEPARENT.exec(header.trim());
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2], flags: m[3] };
}

export function formatTraceparent(t: TraceContext): string {
  return `00-${t.traceId}-${t.spanId}-${t.flags}`;
}

/** A new trace, sampled: nothing upstream decided otherwise. Both ids come from one draw: one call, not two. */
export function newTrace(): TraceContext {
  const ids = randomHex(24);
  return { traceId: ids.slice(0, 32), spanId: ids.slice(32), flags: '01' };
}

/** The same trace, one step further: a new span id whose parent is `t`'s. */
export function childOf(t: TraceContext): TraceContext {
  return { ...t, spanId: randomHex(8) };
}

/**
 * The `traceparent` header for a record written inside span `t`, if there is one. The span is handed down as an
 * argument, not kept in an AsyncLocalStorage: entering one turns on promise hooks for the whole process, and they
 * cost the api, the runner and the bridge about a tenth of their CPU (measured end to end in the closing note of #9).
 */
export function traceHeaders(t: TraceContext | undefined): { traceparent?: string } {
  return t ? { traceparent: formatTraceparent(t) } : {};
}
