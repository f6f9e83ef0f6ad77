import { EventEmitter } from 'node:events';

/** What a task event stream writes to its ServerResponse: the heads written, and whether it was ended. */
export class FakeResponse extends EventEmitter {
  heads = 0;
  writableEnded = false;
  destroyed = false;
  writableNeedDrain = false;
  writeHead(): this {
    if (this.writableEnded) throw new Error('Cannot write headers after they are sent to the client');
    this.heads += 1;
    return this;
  }
  write(): boolean {
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
}
