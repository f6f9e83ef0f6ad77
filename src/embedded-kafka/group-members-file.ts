import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { GroupMemberRecord } from '../kafka/types';
import type { Logger } from '../logger';

/**
 * The member id of each consumer group's latest join, kept in the embedded broker's data folder, which one process
 * at a time holds (its lock): what a restarted `npm start` finds there was its previous run's, a member that is gone
 * with that run. Kept beside the broker's own data, it goes when that data goes (a fresh cluster has no such member).
 * A file that cannot be read or written costs only the wait it would have saved.
 */
export function groupMembersFile(file: string, logger: Logger): GroupMemberRecord {
  let members: Record<string, string> = {};
  try {
    const read: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (read && typeof read === 'object' && !Array.isArray(read)) {
      members = Object.fromEntries(
        Object.entries(read).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') logger.warn({ err, file }, 'group members file not read');
  }
  const previous = { ...members };
  return {
    previous: (groupId) => (Object.hasOwn(previous, groupId) ? previous[groupId] : undefined),
    joined(groupId, memberId) {
      if (members[groupId] === memberId) return;
      members = { ...members, [groupId]: memberId };
      // Renamed into place: a process killed mid-write leaves the previous file whole, not half of this one.
      const staging = `${file}.${process.pid}.tmp`;
      try {
        writeFileSync(staging, JSON.stringify(members));
        renameSync(staging, file);
      } catch (err) {
        logger.warn({ err, file }, 'group members file not written');
      }
    },
  };
}
