/** What a group join says about this member: its id, and the generation it joined (kafkajs, patched to tell it). */
export interface JoinedAs {
  memberId: string;
  generationId?: number;
}

/**
 * Whether the work a member holds may have been another member's since its previous join, so that all of it is
 * handed back, also on partitions assigned to it again. Two ways:
 * - a new member id: the coordinator dropped the member (its session expired: a paused process), and its
 *   partitions were others' meanwhile;
 * - a generation skipped: the member joined a generation whose assignment it never received (its SyncGroup was
 *   answered REBALANCE_IN_PROGRESS and kafkajs joined again). Another member may have had its partitions in that
 *   generation, run their records from the committed offset and lost them again; the chaos audit saw a runner keep a
 *   partition across such a generation, and two runs of one task. The coordinator numbers generations one by one.
 */
export function continuesFrom(previous: JoinedAs | undefined, now: JoinedAs): boolean {
  if (previous === undefined) return true;
  if (now.memberId !== previous.memberId) return false;
  if (previous.generationId === undefined || now.generationId === undefined) return true;
  return now.generationId === previous.generationId + 1;
}
