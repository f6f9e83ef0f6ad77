import { MAX_NAMED_BACKLOGS, Metrics, type BacklogLag } from '../../src/metrics/metrics';

/*
 * A bridge's callback backlogs are read at each scrape (hookstream_callback_backlog_offsets), like the consumer lag:
 * from memory, never from Kafka, and only while the bridge that reported them runs.
 */
const series = async (metrics: Metrics) =>
  (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('hookstream_callback_backlog_offsets{'));

test('each backlog is a series per subscription and partition, read at every scrape, gone once its bridge stops', async () => {
  const metrics = new Metrics(() => []);
  let backlogs: BacklogLag[] = [
    { subscription: 'sub-1', topic: 'hookstream.task-events', partition: 2, lag: 40 },
    { subscription: 'sub-2', topic: 'hookstream.domain-events', partition: 0, lag: 3 },
  ];
  const unwatch = metrics.watchCallbackBacklogs(() => backlogs);
  expect(await series(metrics)).toEqual([
    'hookstream_callback_backlog_offsets{subscription="sub-1",topic="hookstream.task-events",partition="2"} 40',
    'hookstream_callback_backlog_offsets{subscription="sub-2",topic="hookstream.domain-events",partition="0"} 3',
  ]);
  // Read again at the next scrape: a backlog that ended is no longer listed.
  backlogs = [{ subscription: 'sub-1', topic: 'hookstream.task-events', partition: 2, lag: 12 }];
  expect(await series(metrics)).toEqual([
    'hookstream_callback_backlog_offsets{subscription="sub-1",topic="hookstream.task-events",partition="2"} 12',
  ]);
  unwatch();
  expect(await series(metrics)).toEqual([]);
});

test('at most 20 subscriptions are named, the largest backlogs; the rest are summed per partition under "other"', async () => {
  // One series per failing task callback grew with the failures of an incident: labels stay bounded.
  const metrics = new Metrics(() => []);
  const backlogs: BacklogLag[] = Array.from({ length: 500 }, (_, n) => ({
    subscription: `sub-${n}`,
    topic: 'hookstream.task-events',
    partition: n % 2,
    lag: n + 1,
  }));
  metrics.watchCallbackBacklogs(() => backlogs);
  const lines = await series(metrics);
  const named = lines.filter((l) => !l.includes('subscription="other"'));
  expect(named).toHaveLength(MAX_NAMED_BACKLOGS);
  expect(named).toContain(
    'hookstream_callback_backlog_offsets{subscription="sub-499",topic="hookstream.task-events",partition="1"} 500',
  );
  expect(named.some((l) => l.includes('subscription="sub-479"'))).toBe(false);
  const total = (ls: string[]) => ls.reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  expect(total(lines)).toBe((500 * 501) / 2);
  expect(lines.filter((l) => l.includes('subscription="other"'))).toHaveLength(2);
});
