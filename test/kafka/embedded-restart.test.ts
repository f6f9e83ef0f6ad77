import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { javaMajorVersion } from '../../src/embedded-kafka/local-broker-jars';
import { brokerJvmOf, gone, startOnEmbedded } from '../support/embedded-process';
import { until } from '../support/until';

const hasJava = (javaMajorVersion() ?? 0) >= 17;
const withJava = hasJava ? test : test.skip;
if (!hasJava)
  console.warn('embedded restart test skipped: it starts a broker from the Kafka jars, which needs Java 17+');

const GROUPS = ['hookstream.task-runner', 'hookstream.callback-bridge'];
const KEY = 'restart-key-0123456789';

/** Each group's members as the coordinator has them. */
async function membersOf(bootstrap: string): Promise<Map<string, string[]>> {
  const admin = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups(GROUPS);
    return new Map(groups.map((g) => [g.groupId, g.state === 'Stable' ? g.members.map((m) => m.memberId) : []]));
  } finally {
    await admin.disconnect();
  }
}

/** Each group's one member, once every group is Stable with one. */
const eachGroupStable = (bootstrap: string) =>
  until(
    async () => {
      const members = await membersOf(bootstrap);
      return GROUPS.every((g) => members.get(g)?.length === 1) ? members : undefined;
    },
    60000,
    200,
    'each group Stable with one member',
  );

/** The members a process said it took out of their groups at start, per group (its JSON log lines). */
function leftForPreviousRun(output: string): Map<string, string> {
  const left = new Map<string, string>();
  for (const line of output.split('\n')) {
    if (!line.includes('left the group for the previous run')) continue;
    const { groupId, memberId } = JSON.parse(line) as { groupId: string; memberId: string };
    left.set(groupId, memberId);
  }
  return left;
}

async function taskEnds(url: string): Promise<string> {
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ type: 'countdown', input: { steps: 1, stepMs: 1 } });
  const accepted = (await (await fetch(`${url}/tasks`, { method: 'POST', headers, body })).json()) as {
    taskId: string;
  };
  return until(
    async () => {
      const task = (await (await fetch(`${url}/tasks/${accepted.taskId}`, { headers })).json()) as { status: string };
      return task.status === 'succeeded' ? task.status : undefined;
    },
    60000,
    200,
    'the task after the restart to succeed',
  );
}

describe('restart on the embedded default', () => {
  withJava(
    "after a SIGKILL, the next start takes the previous run's members out of their groups instead of waiting out " +
      'their sessions, and runs tasks',
    async () => {
      // Killed, a run never leaves its groups: the coordinator kept its members for a session (10 s) after the next
      // start, and that start's runner and bridge joined only then.
      const cacheDir = mkdtempSync(join(tmpdir(), 'hookstream-restart-'));
      const env = { LOG_LEVEL: 'info', API_KEYS: `t1:${KEY}` };
      let java = 0;
      const first = startOnEmbedded(cacheDir, env);
      let second: ReturnType<typeof startOnEmbedded> | undefined;
      try {
        await first.waitFor('hookstream is running', 180000);
        const bootstrap = /Kafka: +(127\.0\.0\.1:\d+)/.exec(first.output())?.[1] as string;
        const before = await eachGroupStable(bootstrap);
        java = brokerJvmOf(cacheDir);
        first.child.kill('SIGKILL');
        await first.exited;
        expect(await gone(java, 60000)).toBe(true);

        second = startOnEmbedded(cacheDir, env);
        await second.waitFor('hookstream is running', 180000);
        const left = leftForPreviousRun(second.output());
        for (const group of GROUPS) expect(left.get(group)).toBe(before.get(group)?.[0]);
        const bootstrapNow = /Kafka: +(127\.0\.0\.1:\d+)/.exec(second.output())?.[1] as string;
        const after = await eachGroupStable(bootstrapNow);
        for (const group of GROUPS) {
          expect(after.get(group)).toHaveLength(1);
          expect(after.get(group)).not.toContain(before.get(group)?.[0]);
        }
        const url = /API: +(http:\/\/\S+)/.exec(second.output())?.[1] as string;
        expect(await taskEnds(url)).toBe('succeeded');
      } finally {
        first.child.kill('SIGKILL');
        second?.child.kill('SIGKILL');
        java = brokerJvmOf(cacheDir);
        if (java > 0) await gone(java, 60000);
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
    420000,
  );
});
