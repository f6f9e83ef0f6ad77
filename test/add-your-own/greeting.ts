import { defineTaskType } from '../../src/tasks/task-type';

/** Greets each name in turn: one task.progress per name, then the greetings as the result. */
export const greeting = defineTaskType<{ names: string[] }, { greetings: string[] }>({
  name: 'greeting',
  description: 'Greets every name given, reporting progress after each.',
  inputSchema: {
    type: 'object',
    properties: { names: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 100 } },
    required: ['names'],
    additionalProperties: false,
  },
  async run({ input, progress }) {
    const greetings: string[] = [];
    for (const name of input.names) {
      greetings.push(`Hello, ${name}!`);
      progress(greetings.length, input.names.length);
    }
    return { greetings };
  },
});
