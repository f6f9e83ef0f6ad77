import type { Admin, Kafka } from 'kafkajs';

/**
 * Reads a consumer group's committed offsets on an admin client of its own, made when first needed. A failed read
 * drops and closes that admin: the next read is on a new connection, since one a stalled broker left half made fails
 * every call (high-watermarks.ts). Only the admin that read used: a later read may have made a new one meanwhile.
 * One reader per asker (the assignment's announce, the lag probe), so a probe that fails never breaks off an
 * announce's read.
 */
export class CommittedOffsets {
  private admin: Admin | undefined;
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly groupId: string,
  ) {}

  async read(topics: string[]): ReturnType<Admin['fetchOffsets']> {
    const used = (this.admin ??= this.kafka.admin());
    try {
      await used.connect();
      return await used.fetchOffsets({ groupId: this.groupId, topics });
    } catch (err) {
      if (this.admin === used) this.admin = undefined;
      await used.disconnect().catch(() => undefined);
      throw err;
    } finally {
      // kafkajs connects again for any request: a read that outlived the close closes what it reopened.
      if (this.closed) await used.disconnect().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.admin?.disconnect().catch(() => undefined);
  }
}
