import { ROOT_CONTEXT, SpanKind as OtelKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config';
import { loggableEndpoint, type Logger } from '../logger';
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
export function otlpTracer(
  config: Required<Pick<TracingConfig, 'url' | 'headers' | 'serviceName'>>,
  logger: Logger,
): Tracer {
  const exporter = new OTLPTraceExporter({ url: config.url, headers: config.headers });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: toldWhenFailing(exporter, config.url, logger) })],
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

/** A failed export is told at most this often: a collector that is down fails every batch. */
const FAILURE_LOG_EVERY_MS = 60000;

/**
 * The exporter, with its failures logged: the SDK drops a batch it could not send and says nothing, so spans sent
 * to a collector that is down, or to a wrong endpoint, were lost without a line. The first failure is told, then at
 * most one a minute, with the batches dropped meanwhile.
 */
function toldWhenFailing(exporter: SpanExporter, url: string, logger: Logger): SpanExporter {
  let toldAt = -Infinity;
  let failed = 0;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (@opentelemetry/core, which this project does not depend on directly).
        if (result.code !== 0) {
          failed += 1;
          if (Date.now() - toldAt >= FAILURE_LOG_EVERY_MS) {
            logger.warn(
              { err: result.error, url: loggableEndpoint(url), batchesDropped: failed },
              'trace export failed; spans dropped',
            );
            toldAt = Date.now();
            failed = 0;
          }
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
