import { TENANT_A_KEY } from './test-service';

/** One POST /tasks as the load sent it and the api answered it. */
export interface Submission {
  /** when the request was sent and when its answer (or error) came, epoch ms */
  sentAt: number;
  answeredAt: number;
  /** 0 when no HTTP answer came (connection error or client timeout) */
  status: number;
  contentType: string;
  retryAfter: string | null;
  problemType?: string;
  taskId?: string;
  subscriptionId?: string;
  error?: string;
}

export interface LoadOptions {
  /** the api's base URL */
  api: string;
  /** the body of the n-th submission */
  body(n: number): Record<string, unknown>;
  /** requests in flight at once */
  workers: number;
  /** a worker's pause between requests: the pace of the load, never a proof of anything */
  paceMs: number;
  /** the pause after an answer other than 202 (a client backing off a little), default paceMs */
  failurePaceMs?: number;
  /** stop after this many 202s (see limit) */
  maxAccepted: number;
  /** a client's own bound on one request, far above any bound the api promises */
  requestTimeoutMs?: number;
}

/**
 * Submits tasks over HTTP continuously, from a few workers, until stopped or
 * enough were accepted; records every answer with its latency.
 */
export class TaskLoad {
  readonly submissions: Submission[] = [];
  private stopped = false;
  private sent = 0;
  private inFlight = 0;
  private done: Promise<void> | undefined;

  constructor(private readonly options: LoadOptions) {}

  get accepted(): Submission[] {
    return this.submissions.filter((s) => s.status === 202);
  }

  start(): this {
    this.done = Promise.all(Array.from({ length: this.options.workers }, () => this.work())).then(() => undefined);
    return this;
  }

  /** Changes how many 202s end the load, e.g. once a fault schedule is through. */
  limit(maxAccepted: number): void {
    this.options.maxAccepted = maxAccepted;
  }

  /** Stops sending and waits for the requests in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** Answers that came after `since` (epoch ms), by when they were sent. */
  sentAfter(since: number): Submission[] {
    return this.submissions.filter((s) => s.sentAt >= since);
  }

  private async work(): Promise<void> {
    // Requests in flight count against the limit, so the workers never overshoot it.
    while (!this.stopped && this.accepted.length + this.inFlight < this.options.maxAccepted) {
      const n = this.sent++;
      this.inFlight += 1;
      const s = await submit(this.options.api, this.options.body(n), this.options.requestTimeoutMs ?? 30000);
      this.inFlight -= 1;
      this.submissions.push(s);
      const pace = s.status === 202 ? this.options.paceMs : (this.options.failurePaceMs ?? this.options.paceMs);
      if (pace > 0) await new Promise((r) => setTimeout(r, pace));
    }
  }
}

async function submit(api: string, body: Record<string, unknown>, timeoutMs: number): Promise<Submission> {
  const sentAt = Date.now();
  try {
    const res = await fetch(`${api}/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TENANT_A_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    const answeredAt = Date.now();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text);
    } catch {
      /* a body that is not JSON is checked through contentType */
    }
    const links = json._links as Record<string, { href: string }> | undefined;
    return {
      sentAt,
      answeredAt,
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      retryAfter: res.headers.get('retry-after'),
      ...(typeof json.type === 'string' && res.status >= 400 ? { problemType: json.type } : {}),
      ...(typeof json.taskId === 'string' ? { taskId: json.taskId } : {}),
      ...(links?.subscription ? { subscriptionId: links.subscription.href.split('/').pop() } : {}),
    };
  } catch (err) {
    return { sentAt, answeredAt: Date.now(), status: 0, contentType: '', retryAfter: null, error: String(err) };
  }
}
