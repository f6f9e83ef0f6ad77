import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { GroupMemberRecord } from '../kafka/stale-member';
import { alive, thisProcess, type Holder } from '../lib/pid-lock';
import type { Logger } from '../logger';

interface MembersFile {
  /** the process whose members these are */
  owner: Holder;
  /** group id → the member id of its latest join */
  members: Record<string, string>;
}

function readMembersFile(file: string, logger: Logger): MembersFile | undefined {
  try {
    const read = JSON.parse(readFileSync(file, 'utf8')) as Partial<MembersFile> | null;
    const owner = read?.owner;
    const members = read?.members;
    if (typeof owner?.pid !== 'number' || !members || typeof members !== 'object' || Array.isArray(members)) return;
    const ids = Object.entries(members).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    const startTime = typeof owner.startTime === 'string' ? owner.startTime : undefined;
    return { owner: { pid: owner.pid, startTime }, members: Object.fromEntries(ids) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err, file }, 'group members file not read');
    return undefined;
  }
}

/**
 * The member id of each consumer group's latest join, kept in the embedded broker's data folder, which one process
 * at a time holds (its lock): what a restarted `npm start` finds there is its previous run's. That run is gone, or
 * its members would be live: a run whose broker died frees the folder while it stops (up to half a minute), and its
 * consumers may reach the next run's broker meanwhile. So the file names its owner, and an owner still running
 * leaves nothing to take out. A file that cannot be read or written costs only the wait it would have saved.
 */
export function groupMembersFile(file: string, logger: Logger): GroupMemberRecord {
  const before = readMembersFile(file, logger);
  const previous = before && !alive(before.owner) ? before.members : {};
  if (before && previous !== before.members)
    logger.info({ file, pid: before.owner.pid }, "the previous run still runs: its groups' members are left in");
  const owner = thisProcess();
  let members: Record<string, string> = {};
  return {
    previous: (groupId) => (Object.hasOwn(previous, groupId) ? previous[groupId] : undefined),
    joined(groupId, memberId) {
      if (members[groupId] === memberId) return;
      members = { ...members, [groupId]: memberId };
      // Renamed into place: a process killed mid-write leaves the previous file whole, not half of this one.
      const staging = `${file}.${process.pid}.tmp`;
      try {
        writeFileSync(staging, JSON.stringify({ owner, members } satisfies MembersFile));
        renameSync(staging, file);
      } catch (err) {
        logger.warn({ err, file }, 'group members file not written');
      }
    },
  };
}
