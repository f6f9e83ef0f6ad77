import type { ProblemDetail } from './problem-detail';
import { PROBLEM_TYPES, type ProblemKind } from './problem-types';

export interface ProblemErrorOptions {
  errors?: ProblemDetail[];
  processed?: unknown;
  status?: number;
  headers?: Record<string, string>;
  extensions?: Record<string, unknown>;
}

/** Thrown anywhere in a request; the problem plugin turns it into the response. */
export class ProblemError extends Error {
  constructor(
    readonly kind: ProblemKind,
    readonly detail: string,
    readonly options: ProblemErrorOptions = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
  }

  get status(): number {
    return this.options.status ?? PROBLEM_TYPES[this.kind].status;
  }
}

/**
 * An error from below the HTTP layer (the Kafka adapter, a store) that names the problem it means. Its message
 * is for the log, never for the client: the problem plugin answers with the kind's public detail.
 */
export interface KindedError extends Error {
  readonly problemKind: ProblemKind;
  /** what the client may be told, when the kind's public detail says too little (it holds nothing internal) */
  readonly publicDetail?: string;
}

export function problemKindOf(err: unknown): ProblemKind | undefined {
  if (!(err instanceof Error) || !('problemKind' in err)) return undefined;
  const kind = (err as KindedError).problemKind;
  return Object.hasOwn(PROBLEM_TYPES, kind) ? kind : undefined;
}
