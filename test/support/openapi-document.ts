import { execFileSync } from 'node:child_process';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/* What the OpenAPI tests need: the document's shape, a maintained validator, and its schemas as validators. */

export interface Media {
  schema?: object;
  example?: unknown;
  examples?: unknown;
}
export interface Response {
  description: string;
  content?: Record<string, Media>;
  headers?: Record<string, object>;
}
export interface Parameter {
  in: string;
  name: string;
  style?: string;
  explode?: boolean;
  schema?: object;
}
export interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: object[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, Media> };
  responses: Record<string, Response>;
}
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; description?: string };
  security?: object[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties?: Record<string, object> }>;
    securitySchemes: Record<string, object>;
  };
}

export interface ValidatorVerdict {
  valid: boolean;
  version?: string;
  errors?: unknown;
}

/**
 * @seriousme/openapi-schema-validator on a document: its own OpenAPI 3.x schemas, the schemas inside included.
 * The package is an ES module only, which this CommonJS test runner cannot load, so it runs in a Node process.
 */
export function validateWithOpenApiValidator(document: unknown): ValidatorVerdict {
  const script = `
    const { readFileSync } = require('node:fs');
    import('@seriousme/openapi-schema-validator').then(async ({ Validator }) => {
      const validator = new Validator();
      const result = await validator.validate(JSON.parse(readFileSync(0, 'utf8')));
      process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors }));
    });`;
  const out = execFileSync(process.execPath, ['-e', script], { input: JSON.stringify(document), cwd: process.cwd() });
  return JSON.parse(out.toString()) as ValidatorVerdict;
}

/** The document's components as `$defs`, so each response schema compiles on its own with JSON Schema 2020-12. */
export class DocumentSchemas {
  private readonly ajv = new Ajv2020({ strict: true, allErrors: true });
  private readonly defs: Record<string, object>;

  constructor(document: OpenApiDocument) {
    addFormats(this.ajv);
    // OpenAPI's own keywords in schema objects
    this.ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
    this.defs = this.local(document.components.schemas);
  }

  compile(schema: object): ValidateFunction {
    return this.ajv.compile({ $defs: this.defs, ...this.local(schema) });
  }

  private local<T>(schema: T): T {
    return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/$defs/')) as T;
  }
}
