import { problem, type ProblemDetail } from '../problems/problem-detail';
import { compile, validationErrors, type Validator } from '../problems/validation';
import type { TaskType } from './task-type';

/** The declared task types, each with its compiled input validator. */
export class TaskRegistry {
  private readonly types = new Map<string, { type: TaskType; validate: Validator }>();

  constructor(types: TaskType[]) {
    for (const type of types) {
      if (this.types.has(type.name)) throw new Error(`task type ${type.name} declared twice`);
      this.types.set(type.name, { type, validate: compile(type.inputSchema) });
    }
  }

  get(name: string): TaskType | undefined {
    return this.types.get(name)?.type;
  }

  names(): string[] {
    return [...this.types.keys()];
  }

  all(): TaskType[] {
    return [...this.types.values()].map((t) => t.type);
  }

  /**
   * Field errors for a type name and its input; pointers are `/type` and `/input/...`. `accepted`: the api took the
   * request (a 202 was answered), so the type's own check is not made again: a check tightened since, or one the api
   * that accepted it did not have, must not fail a task that was promised.
   */
  inputErrors(typeName: unknown, input: unknown, accepted = false): ProblemDetail[] {
    const entry = typeof typeName === 'string' ? this.types.get(typeName) : undefined;
    if (!entry) {
      // The declared types, with their input schemas, are at /task-types.
      return [
        problem('invalid-field', `/type must be one of: ${this.names().join(', ')} (see /task-types)`, {
          instance: '/type',
          _links: { 'task-types': { href: '/task-types' } },
        }),
      ];
    }
    const errors = validationErrors(entry.validate, input, '/input');
    if (errors.length > 0 || !entry.type.checkInput || accepted) return errors;
    try {
      return entry.type
        .checkInput(input)
        .map((e) => problem('invalid-field', e.detail, { instance: `/input${e.pointer}` }));
    } catch (err) {
      // A check that throws refuses the input rather than fail the request: in the runner a throw would be retried
      // for ever and hold its partition.
      const detail = `/input could not be checked by ${entry.type.name}: ${(err as Error).message}`;
      return [problem('invalid-field', detail, { instance: '/input' })];
    }
  }
}
