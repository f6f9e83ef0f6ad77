import type { TaskEventStream } from './task-event-stream';

/**
 * The event streams an api instance serves. A server that closes ends them (clients reconnect elsewhere with
 * Last-Event-ID) instead of waiting for them, and a stream that was still opening when the close began (its reader
 * takes a moment on a busy broker) is ended as soon as it is open: served on, it held the close until the process's
 * stop limit, which exited 1 and reset its clients' connections.
 */
export class OpenEventStreams {
  private readonly streams = new Set<TaskEventStream>();
  private closed = false;

  /** A stream that is open, until it has been `served`. */
  add(stream: TaskEventStream, served: Promise<void>): void {
    if (this.closed) return stream.end();
    this.streams.add(stream);
    void served.then(() => this.streams.delete(stream));
  }

  endAll(): void {
    this.closed = true;
    for (const s of this.streams) s.end();
  }
}
