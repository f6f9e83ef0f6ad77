import { childOf, newTrace, type TraceContext } from './trace-context';

export type SpanKind = 'server' | 'client' | 'producer' | 'consumer' | 'internal';

export interface Span {
  /** what a record or request made inside the span names as its parent */
  readonly context: TraceContext;
  end(error?: unknown): void;
}

/** Where the roles start spans: OTLP export when the OTEL_* settings ask for it (otlp-tracer.ts), else none. */
export interface Tracer {
  /** a span of this process: a child of `parent`, or the root of a new trace */
  start(name: string, kind: SpanKind, parent: TraceContext | undefined, attributes?: Record<string, string>): Span;
  /** sends what is still buffered */
  shutdown(): Promise<void>;
}

const NOTHING_TO_END = () => undefined;

/** W3C propagation only: span ids that are never exported, at the cost of a random number. */
export const PROPAGATION_ONLY: Tracer = {
  start: (_name, _kind, parent) => ({ context: parent ? childOf(parent) : newTrace(), end: NOTHING_TO_END }),
  shutdown: async () => undefined,
};
