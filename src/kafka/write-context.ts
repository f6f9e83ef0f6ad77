import type { Deadline } from '../lib/deadline';
import type { TraceContext } from '../tracing/trace-context';
import type { KeyedCreation } from './types';

/**
 * What a store's write is made in, handed down from the route: the request's span, which the records name as their
 * parent, and its creation under an Idempotency-Key, whose answer the write carries. Passed as an argument rather
 * than kept in an AsyncLocalStorage: entering one turns on promise hooks for the whole process.
 */
export interface WriteContext {
  trace?: TraceContext;
  idempotency?: KeyedCreation;
  /** the request's deadline when it began before the write (a wait for earlier writes of the same resource) */
  deadline?: Deadline;
}
