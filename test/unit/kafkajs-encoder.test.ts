// kafkajs's own encoder and record batch, patched (src/kafka/patches)
/* eslint-disable @typescript-eslint/no-require-imports */
export {}; // a module: its names do not meet other test files' in the global scope
const Encoder = require('kafkajs/src/protocol/encoder') as new (initialSize?: number) => {
  writeInt32(v: number): unknown;
  writeString(v: string): unknown;
  writeVarIntBytes(v: Buffer | string): unknown;
  readonly buffer: Buffer;
};
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
  RecordBatch(input: { records: unknown[] }): Promise<{ buffer: Buffer }>;
};
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (input: {
  offsetDelta: number;
  key: Buffer;
  value: Buffer;
  headers?: Record<string, string>;
}) => unknown;
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (decoder: unknown) => Promise<{
  records: { key: Buffer; value: Buffer; headers: Record<string, Buffer>; offset: string }[];
}>;
/* eslint-enable @typescript-eslint/no-require-imports */

/*
 * kafkajs 2.2.4 makes every Encoder (several per record: the record, its headers, the batch) with Buffer.alloc:
 * a zero-filled buffer of its own, outside Node's pool. That was about a tenth of the task runner's CPU with the
 * garbage collection it caused. The patch (src/kafka/patches) takes them from the pool with allocUnsafe. That is
 * safe only because an Encoder hands out exactly the bytes it wrote (buf.slice(0, offset)); these tests hold it
 * to that with a pool full of stale bytes.
 */
function dirtyThePool(): void {
  for (let i = 0; i < 64; i += 1) Buffer.allocUnsafe(512).fill(0xab);
}

describe("kafkajs's Encoder, patched to use Node's buffer pool", () => {
  it('takes its buffers from the pool, never a zero-filled allocation', () => {
    const alloc = jest.spyOn(Buffer, 'alloc');
    try {
      const e = new Encoder();
      e.writeString('x'.repeat(2000)); // grows past its first buffer
      expect(alloc).not.toHaveBeenCalled();
    } finally {
      alloc.mockRestore();
    }
  });

  it('hands out exactly the bytes written, whatever the pool held', () => {
    dirtyThePool();
    const e = new Encoder();
    e.writeInt32(7);
    e.writeString('héllo');
    e.writeVarIntBytes(Buffer.from([1, 2, 3]));
    const expected = Buffer.concat([
      Buffer.from([0, 0, 0, 7]),
      Buffer.from([0, 6]),
      Buffer.from('héllo', 'utf8'),
      Buffer.from([6, 1, 2, 3]), // zig-zag varint 3, then the bytes
    ]);
    expect(e.buffer.equals(expected)).toBe(true);
  });

  it('a record batch it encodes decodes back to the same records, CRC checked', async () => {
    dirtyThePool();
    const records = Array.from({ length: 50 }, (_, i) =>
      Record({
        offsetDelta: i,
        key: Buffer.from(`task-${i}`),
        value: Buffer.from(JSON.stringify({ n: i, pad: 'y'.repeat(i * 13) })),
        headers: { traceparent: `00-${'a'.repeat(32)}-${String(i).padStart(16, '0')}-01` },
      }),
    );
    const { buffer } = await RecordBatch({ records });
    dirtyThePool();
    const decoded = await decodeBatch(new Decoder(buffer));
    expect(decoded.records.map((r) => r.key.toString())).toEqual(records.map((_, i) => `task-${i}`));
    expect(JSON.parse(decoded.records[49].value.toString())).toEqual({ n: 49, pad: 'y'.repeat(49 * 13) });
    expect(decoded.records[3].headers.traceparent.toString()).toBe(`00-${'a'.repeat(32)}-${'3'.padStart(16, '0')}-01`);
  });
});
