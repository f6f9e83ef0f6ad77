import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: Record<string, unknown> & {
    _links: Record<string, { href: string }>;
    UUID: string;
    event: string;
    taskId?: string;
    data: Record<string, unknown>;
  };
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** hold the answer this long */
  delayMs?: number;
}

/** A real HTTP callback receiver on loopback that records every request and answers as told. */
export class Receiver {
  readonly received: Received[] = [];
  private server: Server | undefined;
  /** woken on every request that arrives: waitFor awaits these instead of polling */
  private readonly arrivals = new Set<() => void>();
  url = '';

  constructor(private respond: (r: Received, index: number) => Reply = () => ({ status: 200 })) {}

  answer(respond: (r: Received, index: number) => Reply): void {
    this.respond = respond;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        let json: Received['json'];
        try {
          json = JSON.parse(body);
        } catch {
          json = {} as Received['json'];
        }
        const r: Received = { path: req.url ?? '', headers: req.headers, body, json, at: Date.now() };
        this.received.push(r);
        for (const wake of [...this.arrivals]) wake();
        const reply = this.respond(r, this.received.length - 1);
        const send = () => {
          res.writeHead(reply.status, reply.headers);
          res.end();
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
        else send();
      });
    });
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Resolves with the requests once `count` have arrived; fails after `timeoutMs`, saying how many came. */
  waitFor(count: number, timeoutMs = 20000): Promise<Received[]> {
    if (this.received.length >= count) return Promise.resolve(this.received);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.arrivals.delete(arrived);
      };
      const arrived = () => {
        if (this.received.length < count) return;
        done();
        resolve(this.received);
      };
      const timer = setTimeout(() => {
        done();
        const tally = `${this.received.length} of ${count} requests arrived in ${timeoutMs} ms`;
        reject(new Error(`receiver ${this.url}: ${tally}`));
      }, timeoutMs);
      this.arrivals.add(arrived);
    });
  }
}

/** Listens on a free loopback port; short keep-alive so a stopped receiver does not wait on idle sockets. */
export async function listenOnLoopback(server: Server): Promise<string> {
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}
