import { cloudEventRecord } from '../../src/events/cloud-event';

const args = {
  topic: 'events',
  key: 'k',
  type: 'task.accepted',
  subject: 't-1',
  data: { event: 'task.accepted' },
  id: 'e-1',
  time: '2026-01-01T00:00:00.000Z',
  extensions: { tenant: 'acme' },
};

describe('cloudEventRecord', () => {
  it('writes the binding headers, extensions as ce_ headers, then content-type, in that order', () => {
    const record = cloudEventRecord(args);
    expect(Object.entries(record.headers ?? {})).toEqual([
      ['ce_specversion', '1.0'],
      ['ce_id', 'e-1'],
      ['ce_type', 'task.accepted'],
      ['ce_source', '/hookstream'],
      ['ce_subject', 't-1'],
      ['ce_time', '2026-01-01T00:00:00.000Z'],
      ['ce_tenant', 'acme'],
      ['content-type', 'application/json'],
    ]);
    expect(record.value).toBe('{"event":"task.accepted"}');
  });

  it('adds the traceparent of the span it is written in, last', () => {
    const trace = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), flags: '01' };
    const record = cloudEventRecord({ ...args, trace });
    const names = Object.keys(record.headers ?? {});
    expect(names.at(-1)).toBe('traceparent');
    expect(record.headers?.traceparent).toBe(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`);
  });
});
