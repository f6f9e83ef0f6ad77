import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupMembersFile } from '../../src/embedded-kafka/group-members-file';
import { createLogger } from '../../src/logger';

const logger = createLogger('silent');

describe('the group members file (the previous run of an embedded default)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookstream-members-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("a run finds the previous run's members, never its own joins", () => {
    const file = join(dir, 'group-members.json');
    const first = groupMembersFile(file, logger);
    expect(first.previous('runner')).toBeUndefined();
    first.joined('runner', 'm-1');
    first.joined('bridge', 'b-1');
    first.joined('runner', 'm-2');
    expect(first.previous('runner')).toBeUndefined();
    const second = groupMembersFile(file, logger);
    expect(second.previous('runner')).toBe('m-2');
    expect(second.previous('bridge')).toBe('b-1');
    second.joined('runner', 'm-3');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ runner: 'm-3', bridge: 'b-1' });
  });

  test('a file that is not a map of ids is passed over, and written whole at the next join', () => {
    const file = join(dir, 'group-members.json');
    for (const content of ['{"runner": ', '[1,2]', '{"runner": 7, "__proto__": "x"}', 'null']) {
      writeFileSync(file, content);
      const record = groupMembersFile(file, logger);
      expect(record.previous('runner')).toBeUndefined();
      expect(record.previous('toString')).toBeUndefined();
    }
    groupMembersFile(file, logger).joined('runner', 'm-1');
    expect(groupMembersFile(file, logger).previous('runner')).toBe('m-1');
  });

  test('a folder that cannot be written costs the record, not the join', () => {
    const record = groupMembersFile(join(dir, 'missing', 'group-members.json'), logger);
    expect(() => record.joined('runner', 'm-1')).not.toThrow();
    expect(record.previous('runner')).toBeUndefined();
  });
});
