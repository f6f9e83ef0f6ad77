import { ROOT_CONTEXT, SpanKind as OtelKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config';
import type { TraceContext } from './trace-context';
import type { SpanKind, Tracer } from './tracer';

const KINDS: Record<SpanKind, OtelKind> = {
  server: OtelKind.SERVER,
  client: OtelKind.CLIENT,
  producer: OtelKind.PRODUCER,
  consumer: OtelKind.CONSUMER,
  internal: OtelKind.INTERNAL,
};

/**
 * OpenTelemetry's SDK exporting over OTLP/HTTP (JSON), batched. The provider is the service instance's own, never
 * registered globally: several services in one process (the tests) keep their spans apart, and nothing else in
 * the process is traced behind the operator's back.
 */
export function otlpTracer(config: Required<Pick<TracingConfig, 'url' | 'headers' | 'serviceName'>>): Tracer {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.url, headers: config.headers }) }),
    ],
  });
  const tracer = provider.getTracer('hookstream');
  return {
    start(name, kind, parent, attributes) {
      const context = parent
        ? trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.spanId,
            traceFlags: parseInt(parent.flags, 16),
            isRemote: true,
          })
        : ROOT_CONTEXT;
      const span = tracer.startSpan(name, { kind: KINDS[kind], attributes }, context);
      const s = span.spanContext();
      const flags = s.traceFlags.toString(16).padStart(2, '0');
      const own: TraceContext = { traceId: s.traceId, spanId: s.spanId, flags };
      return {
        context: own,
        end(error?: unknown) {
          if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}
