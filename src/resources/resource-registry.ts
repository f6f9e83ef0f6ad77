import { compile, type Validator } from '../problems/validation';
import { inputSchema, type ResourceDeclaration } from './resource-declaration';

export interface RegisteredResource {
  decl: ResourceDeclaration;
  validate: Validator;
}

/** The declared resources by collection, each with its compiled input validator. */
export class ResourceRegistry {
  private readonly byCollection = new Map<string, RegisteredResource>();

  constructor(declarations: ResourceDeclaration[]) {
    for (const decl of declarations) {
      if (this.byCollection.has(decl.collection)) throw new Error(`resource ${decl.collection} declared twice`);
      this.byCollection.set(decl.collection, { decl, validate: compile(inputSchema(decl)) });
    }
    for (const { decl } of this.byCollection.values()) {
      for (const [rel, r] of Object.entries(decl.relations)) {
        if (!this.byCollection.has(r.collection))
          throw new Error(`${decl.collection}.${rel} points to undeclared ${r.collection}`);
      }
    }
  }

  get(collection: string): RegisteredResource | undefined {
    return this.byCollection.get(collection);
  }

  all(): RegisteredResource[] {
    return [...this.byCollection.values()];
  }

  /** The domain events the declared resources publish (`order.created`, …): kinds a subscription may name. */
  eventKinds(): string[] {
    return this.all().flatMap(({ decl }) => ['created', 'updated', 'deleted'].map((e) => `${decl.name}.${e}`));
  }
}
