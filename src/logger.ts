import pino, { type Logger } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

export function createLogger(level: LogLevel, name = 'hookstream'): Logger {
  return pino({ name, level });
}
