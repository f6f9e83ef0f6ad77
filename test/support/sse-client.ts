import { TENANT_A_KEY } from './test-service';

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseReading {
  status: number;
  headers: Headers;
  /** events in arrival order */
  events: SseEvent[];
  /** comment lines (without the colon), heartbeats among them */
  comments: string[];
  /** resolves when the server ends the stream */
  ended: Promise<void>;
  /** resolves once `count` events have arrived */
  untilEvents(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** the client leaves (closes the connection) */
  close(): void;
  /** raw body, for non-SSE answers (Problems) */
  text(): string;
}

/** A Server-Sent Events client over real HTTP (fetch), parsing the stream as the WHATWG spec does. */
export async function openSse(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
  key: string = TENANT_A_KEY,
): Promise<SseReading> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}${path}`, {
    headers: { accept: 'text/event-stream', authorization: `Bearer ${key}`, ...headers },
    signal: abort.signal,
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let raw = '';
  let notify: () => void = () => undefined;
  const changed = () => {
    const n = notify;
    notify = () => undefined;
    n();
  };
  let pending: SseEvent = { data: '' };
  let hasData = false;
  let buffer = '';
  const onLine = (line: string) => {
    if (line === '') {
      if (hasData || pending.id !== undefined || pending.event !== undefined) {
        events.push({ ...pending, data: pending.data.replace(/\n$/, '') });
      }
      pending = { data: '' };
      hasData = false;
      changed();
      return;
    }
    if (line.startsWith(':')) {
      comments.push(line.slice(1).trim());
      changed();
      return;
    }
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'data') {
      pending.data += `${value}\n`;
      hasData = true;
    } else if (field === 'id') pending.id = value;
    else if (field === 'event') pending.event = value;
  };
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        raw += text;
        buffer += text;
        const lines = buffer.split(/\r\n|\r|\n/);
        buffer = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      }
    } catch {
      // the client closed it
    } finally {
      changed();
    }
  })();
  let done = false;
  void ended.then(() => {
    done = true;
  });
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended,
    async untilEvents(count, timeoutMs = 30000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        if (done) throw new Error(`stream ended after ${events.length} events, wanted ${count}`);
        if (Date.now() > deadline) throw new Error(`only ${events.length} events in ${timeoutMs} ms, wanted ${count}`);
        await new Promise<void>((resolve) => {
          notify = resolve;
          setTimeout(resolve, 200);
        });
      }
      return events.slice(0, count);
    },
    close: () => abort.abort(),
    text: () => raw,
  };
}
