import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { listenOnLoopback } from './receiver';

/** One callback request as the receiver saw it and answered it. */
export interface Delivery {
  /** arrival order over the whole receiver */
  seq: number;
  webhookId: string;
  /** the subscription, from the body's UUID */
  subscription: string;
  event: string;
  taskId?: string;
  data: Record<string, unknown>;
  status: number;
  /** a 2xx the receiver finished writing: the bridge may call it delivered */
  accepted: boolean;
  /** who sent it, when the receiver was given a way to tell (ChaosReceiver's `identify`) */
  sender?: string;
}

export interface ChaosReply {
  status: number;
  headers?: Record<string, string>;
  /** hold the answer this long */
  delayMs?: number;
}

/**
 * How to answer: `ordinal` numbers distinct webhook-ids in the order they
 * first arrived (0, 1, …), `attempt` counts this webhook-id's requests (1, …).
 */
export type ChaosPolicy = (ordinal: number, attempt: number) => ChaosReply;

/**
 * A deterministic failing receiver: the first attempt of every 7th webhook-id
 * is a 500, of some others a 429 with Retry-After: 1 or a hang longer than
 * `hangMs` (answered 503 at last, so a hang is never a success); every other
 * attempt is a 200. Retries always succeed, so nothing should dead-letter.
 */
export function chaosPolicy(hangMs: number): ChaosPolicy {
  return (ordinal, attempt) => {
    if (attempt > 1) return { status: 200 };
    if (ordinal % 7 === 3) return { status: 500 };
    if (ordinal % 29 === 11) return { status: 429, headers: { 'retry-after': '1' } };
    if (ordinal % 31 === 17) return { status: 503, delayMs: hangMs };
    return { status: 200 };
  };
}

/** A real HTTP callback receiver on loopback that answers per a policy and records what it accepted. */
export class ChaosReceiver {
  readonly deliveries: Delivery[] = [];
  private readonly ordinals = new Map<string, number>();
  private readonly attempts = new Map<string, number>();
  private server: Server | undefined;
  url = '';

  /**
   * `identify` names the sender of a new connection from its peer port and the receiver's own (the two ends of the
   * connection: test/support/socket-owner.ts): asked once per connection, while it is new.
   */
  constructor(
    private readonly policy: ChaosPolicy = () => ({ status: 200 }),
    private readonly identify?: (peerPort: number, localPort: number) => string | undefined,
  ) {}

  async start(): Promise<this> {
    const senders = new WeakMap<Socket, string | undefined>();
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(body);
        } catch {
          /* recorded with what it has */
        }
        const webhookId = String(req.headers['webhook-id'] ?? '');
        if (!this.ordinals.has(webhookId)) this.ordinals.set(webhookId, this.ordinals.size);
        const attempt = (this.attempts.get(webhookId) ?? 0) + 1;
        this.attempts.set(webhookId, attempt);
        const reply = this.policy(this.ordinals.get(webhookId) ?? 0, attempt);
        const d: Delivery = {
          seq: this.deliveries.length,
          webhookId,
          subscription: String(json.UUID ?? ''),
          event: String(json.event ?? ''),
          ...(typeof json.taskId === 'string' ? { taskId: json.taskId } : {}),
          data: (json.data ?? {}) as Record<string, unknown>,
          status: reply.status,
          accepted: false,
          // Asked again if the connection's own moment could not tell (the sender's socket table was read mid-change).
          sender: senders.get(req.socket) ?? this.identify?.(req.socket.remotePort ?? 0, req.socket.localPort ?? 0),
        };
        this.deliveries.push(d);
        // A caller killed mid-request leaves a dead socket; writing to it is not an error worth a crash.
        res.on('error', () => undefined);
        res.on('finish', () => {
          d.accepted = reply.status >= 200 && reply.status < 300;
        });
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(reply.status, reply.headers);
          res.end();
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
        else send();
      });
    });
    const identify = this.identify;
    if (identify)
      this.server.on('connection', (socket: Socket) =>
        senders.set(socket, identify(socket.remotePort ?? 0, socket.localPort ?? 0)),
      );
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  get acceptedCount(): number {
    return this.deliveries.filter((d) => d.accepted).length;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
