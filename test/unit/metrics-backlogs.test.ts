import { Metrics, type BacklogLag } from '../../src/metrics/metrics';

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
