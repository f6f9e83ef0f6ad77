import { Kafka, logLevel, type ISocketFactory, type LogEntry } from 'kafkajs';
import { connect } from 'node:net';
import type { Logger } from '../logger';

export interface KafkaClientOptions {
  /** `host:port` each; asked again whenever a client (a producer made anew, a reader) bootstraps */
  brokers: string[] | (() => string[]);
  clientId: string;
  timeoutMs: number;
  logger: Logger;
}

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/*
 * kafkajs logs every retried coordinator error at ERROR, which is routine while
 * a broker starts or a group rebalances; it is demoted to debug so operators
 * see real failures, which surface as rejected calls and readiness instead.
 */
function kafkajsLogCreator(logger: Logger) {
  const log = logger.child({ component: 'kafkajs' });
  return () =>
    ({ level, log: entry }: LogEntry) => {
      const { message, ...rest } = entry;
      const target = level === logLevel.ERROR || level === logLevel.WARN ? 'debug' : (LEVELS[level] ?? 'debug');
      log[target](rest, message);
    };
}

/**
 * kafkajs's own sockets, plus TCP_NODELAY as the Java client sets it: Nagle's algorithm would hold a small request
 * written while the connection's last one is unacknowledged. (The service has no TLS or SASL settings.)
 */
export const noDelaySockets: ISocketFactory = ({ host, port, onConnect }) => {
  const socket = connect({ host, port }, onConnect);
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 60000);
  // kafkajs unrefs its socket on every disconnect, and while a broker is down one connection is disconnected many
  // times. Node defers the unref of a socket without a handle (refused, destroyed) to its 'connect', which never
  // comes: a listener per call, and a MaxListenersExceededWarning after ten. A destroyed socket holds nothing open.
  const unref = socket.unref.bind(socket);
  socket.unref = () => (socket.destroyed ? socket : unref());
  return socket;
};

export function createKafkaClient(options: KafkaClientOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    connectionTimeout: Math.min(3000, options.timeoutMs),
    requestTimeout: Math.max(options.timeoutMs, 5000),
    logLevel: logLevel.WARN,
    logCreator: kafkajsLogCreator(options.logger),
    retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 5 },
    socketFactory: noDelaySockets,
  });
}
