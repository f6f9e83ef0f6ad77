/*
 * src/kafka/patches/ makes kafkajs encode a produced record into one buffer of the record's size: as shipped, every
 * record and every header got an encoder of its own (512 bytes each, zero-filled) and every varint a Buffer, which
 * made record encoding and its garbage a large share of the api's CPU per accepted task. The bytes on the wire are
 * unchanged; these tests pin both.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own record encoder, patched
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (record: {
  key: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string | Buffer | (string | Buffer)[]>;
  offsetDelta?: number;
  timestampDelta?: number;
}) => { buffer: Buffer; buf: Buffer };
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own encoder, patched
const Encoder = require('kafkajs/src/protocol/encoder') as new () => {
  writeVarInt(v: number): { buffer: Buffer };
  writeVarLong(v: number): { buffer: Buffer };
};

// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own decoder, unpatched: the reader's view
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => {
  readVarInt(): number;
  canReadBytes(n: number): boolean;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own record decoder, unpatched
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (
  decoder: InstanceType<typeof Decoder>,
  context: object,
) => { key: Buffer; value: Buffer; headers: Record<string, Buffer | Buffer[]> };

const hex = (b: Buffer) => b.toString('hex');

describe('kafkajs record encoding (patched)', () => {
  it('writes the bytes of the record format v2', () => {
    // body of 12 bytes (zigzag 0x18), attributes, timestamp delta 0, offset delta 0, key "k", value "v", one header h=x
    expect(hex(Record({ key: 'k', value: 'v', headers: { h: 'x' } }).buffer)).toBe('18000000026b02760202680278');
    expect(hex(Record({ key: null, value: null }).buffer)).toBe('0c0000000101' + '00');
    const multi = Record({ key: 'k', value: 'v', headers: { a: ['1', '2'] }, offsetDelta: 300, timestampDelta: 70 });
    // offset delta 300 is zigzag 600 (d804), timestamp delta 70 is zigzag 140 (8c01); header a=1, a=2
    expect(hex(multi.buffer)).toBe('24008c01d804026b0276040261023102610232');
  });

  it('writes varints and varlongs as zigzag LEB128', () => {
    expect(hex(new Encoder().writeVarInt(300).buffer)).toBe('d804');
    expect(hex(new Encoder().writeVarInt(-1).buffer)).toBe('01');
    expect(hex(new Encoder().writeVarInt(2 ** 31 - 1).buffer)).toBe('feffffff0f');
    expect(hex(new Encoder().writeVarLong(-1).buffer)).toBe('01');
    expect(hex(new Encoder().writeVarLong(123456789012).buffer)).toBe('a8e8c8e99707');
  });

  it('writes non-ASCII and long strings as their UTF-8 bytes, as kafkajs reads them back', () => {
    const long = 'x'.repeat(100);
    const headers = { ce_é: 'ü'.repeat(70), [long]: long, tenant: ['a', 'ÿ'], empty: '' };
    const encoded = Record({ key: 'ké', value: `{"v":"${'é'.repeat(40)}"}`, headers, offsetDelta: 2 }).buffer;
    const decoder = new Decoder(encoded);
    decoder.readVarInt(); // the record's length
    const record = decodeRecord(decoder, { firstOffset: '0', firstTimestamp: '0', magicByte: 2 });
    expect(record.key.toString()).toBe('ké');
    expect(record.value.toString()).toBe(`{"v":"${'é'.repeat(40)}"}`);
    const read = Object.fromEntries(
      Object.entries(record.headers).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : String(v)]),
    );
    expect(read).toEqual(headers);
    expect(decoder.canReadBytes(1)).toBe(false);
  });

  it('encodes a record with headers into one buffer of about its size, allocating nothing per header or varint', () => {
    const headers = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`ce_header${i}`, `value ${i}`]));
    // The encoder's one buffer comes from Node's pool (allocUnsafe, see kafkajs-encoder.test.ts).
    const alloc = jest.spyOn(Buffer, 'alloc');
    const allocUnsafe = jest.spyOn(Buffer, 'allocUnsafe');
    const from = jest.spyOn(Buffer, 'from');
    try {
      const record = Record({ key: 'a-task-id', value: '{"event":"task.accepted"}', headers });
      expect(alloc.mock.calls.length + allocUnsafe.mock.calls.length).toBe(1);
      expect(from).not.toHaveBeenCalled();
      expect(record.buf.length).toBeLessThan(2 * record.buffer.length);
    } finally {
      alloc.mockRestore();
      allocUnsafe.mockRestore();
      from.mockRestore();
    }
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own 64-bit integers
const Long = require('kafkajs/src/utils/long') as { fromValue(v: unknown): unknown };
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's own grouping, patched
const groupMessagesPerPartition = require('kafkajs/src/producer/groupMessagesPerPartition') as (args: {
  topic: string;
  partitionMetadata: { partitionId: number; leader: number }[];
  messages: { key: string; value: string; partition?: number }[];
  partitioner: unknown;
}) => Record<string, { key: string }[]>;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's default partitioner, patched
const defaultPartitioner = require('kafkajs/src/producer/partitioners/default') as () => unknown;

describe('kafkajs producer batching (patched)', () => {
  it('encodes a small varlong (a timestamp delta) without 64-bit Long arithmetic, to the same bytes', () => {
    const fromValue = jest.spyOn(Long, 'fromValue');
    try {
      expect(hex(new Encoder().writeVarLong(70).buffer)).toBe('8c01');
      expect(hex(new Encoder().writeVarLong(-(2 ** 31)).buffer)).toBe('ffffffff0f');
      expect(fromValue).not.toHaveBeenCalled();
    } finally {
      fromValue.mockRestore();
    }
    expect(hex(new Encoder().writeVarLong(2 ** 31).buffer)).toBe('8080808010');
  });

  it('groups messages with explicit partitions in order, without listing the available partitions per message', () => {
    const partitionMetadata = [0, 1, 2].map((partitionId) => ({ partitionId, leader: 0 }));
    const filter = jest.spyOn(partitionMetadata, 'filter');
    const messages = Array.from({ length: 9 }, (_, i) => ({ key: `k${i}`, value: 'v', partition: i % 3 }));
    const grouped = groupMessagesPerPartition({
      topic: 't',
      partitionMetadata,
      messages,
      partitioner: defaultPartitioner(),
    });
    expect(Object.fromEntries(Object.entries(grouped).map(([p, ms]) => [p, ms.map((m) => m.key)]))).toEqual({
      0: ['k0', 'k3', 'k6'],
      1: ['k1', 'k4', 'k7'],
      2: ['k2', 'k5', 'k8'],
    });
    expect(filter).not.toHaveBeenCalled();
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's record batch checksum, patched
const crc32C = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C') as (buffer: Buffer) => number;

/** CRC-32C one bit at a time (reflected polynomial 0x82F63B78): slow, and plainly the definition. */
function crc32CBitwise(buffer: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of buffer) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('kafkajs record batch checksum (patched: eight bytes per step)', () => {
  it('gives the CRC-32C check values', () => {
    expect(crc32C(Buffer.from('123456789')).toString(16)).toBe('e3069283');
    // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, 32 bytes of ones
    expect(crc32C(Buffer.alloc(32, 0x00)).toString(16)).toBe('8a9136aa');
    expect(crc32C(Buffer.alloc(32, 0xff)).toString(16)).toBe('62a8ab43');
  });

  it('agrees with the bitwise definition at every length, whole steps and the bytes left over alike', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    for (let length = 0; length <= 70; length += 1) {
      const buffer = Buffer.from(Array.from({ length }, next));
      expect(crc32C(buffer)).toBe(crc32CBitwise(buffer));
    }
  });
});
