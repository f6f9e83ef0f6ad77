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

  /** Field errors for a type name and its input; pointers are `/type` and `/input/...`. */
  inputErrors(typeName: unknown, input: unknown): ProblemDetail[] {
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
    if (errors.length > 0 || !entry.type.checkInput) return errors;
    return entry.type
      .checkInput(input)
      .map((e) => problem('invalid-field', e.detail, { instance: `/input${e.pointer}` }));
  }
}
