import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupMembersFile } from '../../src/embedded-kafka/group-members-file';
import { thisProcess } from '../../src/lib/pid-lock';
import { createLogger } from '../../src/logger';

const logger = createLogger('silent');
/** A file as a run that has ended wrote it: a pid no process has (above Linux's pid_max). */
const endedRun = (members: Record<string, string>) => JSON.stringify({ owner: { pid: 2 ** 23 }, members });

describe('the group members file (the previous run of an embedded default)', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hookstream-members-'));
    file = join(dir, 'group-members.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("a run finds the previous run's members, and writes its own joins under its own name", () => {
    writeFileSync(file, endedRun({ runner: 'm-1', bridge: 'b-1' }));
    const record = groupMembersFile(file, logger);
    expect([record.previous('runner'), record.previous('bridge'), record.previous('other')]).toEqual([
      'm-1',
      'b-1',
      undefined,
    ]);
    record.joined('runner', 'm-2');
    record.joined('runner', 'm-3');
    // What the run read stays what it read; the file now holds this run's members only.
    expect(record.previous('runner')).toBe('m-1');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ owner: thisProcess(), members: { runner: 'm-3' } });
  });

  test('the members of a run that still runs are left alone', async () => {
    const other = spawn('sleep', ['30']);
    try {
      const pid = other.pid as number;
      writeFileSync(file, JSON.stringify({ owner: { pid }, members: { runner: 'm-live' } }));
      expect(groupMembersFile(file, logger).previous('runner')).toBeUndefined();
      // The same pid, started at another time: a pid reused by some other process, the run itself gone.
      writeFileSync(file, JSON.stringify({ owner: { pid, startTime: '1' }, members: { runner: 'm-gone' } }));
      expect(groupMembersFile(file, logger).previous('runner')).toBe('m-gone');
    } finally {
      other.kill('SIGKILL');
    }
  });

  test('a file that is not such a record is passed over, and written whole at the next join', () => {
    const unreadable = [
      '{"owner": ',
      '[1,2]',
      'null',
      '{"members": {"runner": "m"}}',
      endedRun({ runner: 7 } as never),
    ];
    for (const content of unreadable) {
      writeFileSync(file, content);
      const record = groupMembersFile(file, logger);
      expect(record.previous('runner')).toBeUndefined();
      expect(record.previous('toString')).toBeUndefined();
    }
    groupMembersFile(file, logger).joined('runner', 'm-1');
    const written = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, endedRun(written.members));
    expect(groupMembersFile(file, logger).previous('runner')).toBe('m-1');
  });

  test('a folder that cannot be written costs the record, not the join', () => {
    const record = groupMembersFile(join(dir, 'missing', 'group-members.json'), logger);
    expect(() => record.joined('runner', 'm-1')).not.toThrow();
    expect(record.previous('runner')).toBeUndefined();
  });
});
