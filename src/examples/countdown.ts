import { sleep } from '../lib/abortable-sleep';
import { defineTaskType, TaskProblem } from '../tasks/task-type';

interface CountdownInput {
  steps: number;
  stepMs: number;
  failAt?: number;
}

/** For tests, demos and benchmarks: one task.progress per step, fails on demand. */
export const countdown = defineTaskType<CountdownInput, { steps: number }>({
  name: 'countdown',
  description:
    'For tests and demos: counts to `steps`, waiting `stepMs` ms before each step and publishing ' +
    'one task.progress per step; succeeds with {"steps": n}, or fails with a task-failed Problem at step ' +
    '`failAt` (at most `steps`) when given.',
  inputSchema: {
    type: 'object',
    properties: {
      steps: { type: 'integer', minimum: 1, maximum: 10000 },
      stepMs: { type: 'integer', minimum: 0, maximum: 60000 },
      failAt: { type: 'integer', minimum: 1, maximum: 10000 },
    },
    required: ['steps', 'stepMs'],
    additionalProperties: false,
  },
  checkInput: (input) =>
    input.failAt !== undefined && input.failAt > input.steps
      ? [{ pointer: '/failAt', detail: `/input/failAt must be at most steps (${input.steps}): it would never fail` }]
      : [],
  async run({ input, signal, progress }) {
    for (let step = 1; step <= input.steps; step++) {
      if (input.stepMs > 0) await sleep(input.stepMs, signal);
      else if (signal.aborted) throw signal.reason;
      if (input.failAt === step) {
        throw new TaskProblem({ detail: `countdown failed at step ${step}, as asked (failAt)`, step });
      }
      progress(step, input.steps);
    }
    return { steps: input.steps };
  },
});
