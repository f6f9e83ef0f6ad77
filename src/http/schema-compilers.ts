import { AjvCompiler, type BuildCompilerFromPool, type RouteDefinition } from '@fastify/ajv-compiler';
import type { ValidateFunction } from 'ajv';
import type { FastifyServerOptions } from 'fastify';
import { compile } from '../problems/validation';

type RouteCompiler = (route: RouteDefinition) => ValidateFunction;
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/*
 * A body-only Ajv, the way Fastify's validation docs show it: bodies are checked by the project's own ajv (no type
 * coercion, so "42" is not a number; no defaults; no removal of unknown fields; every error reported), which also
 * validates what a route checks by hand (a bulk element, a merged patch), so both say the same thing. Params,
 * querystring and headers keep Fastify's own compiler: a query string is text, so `?limit=5` must become 5, and
 * their 400s name every offending parameter too (allErrors: a query string is at most the 16 KB of a URL, so the
 * cost Fastify's default guards against is bounded).
 */
export function validatorFactory(): BuildCompilerFromPool {
  const fastifyDefault = AjvCompiler();
  return (externalSchemas, options) => {
    // Fastify passes its `ajv` server option here; this project sets none, so there is no JTD mode to keep.
    const everyError = {
      customOptions: { ...options?.customOptions, allErrors: true },
    } as Parameters<BuildCompilerFromPool>[1];
    // Fastify calls a compiler with the route's definition; the typings name only its schema.
    const others = fastifyDefault(externalSchemas, everyError) as unknown as RouteCompiler;
    const byPart: RouteCompiler = (route) => {
      if (route.httpPart === 'body') return compile(route.schema as object);
      return coercesNumbers(route.schema) ? decimalOnly(others(route), integerNames(route.schema)) : others(route);
    };
    return byPart as unknown as ReturnType<BuildCompilerFromPool>;
  };
}

/**
 * Whether a text part's schema can make a number of its text: it names a numeric type, or refers to a schema it does
 * not show. Params and query strings arrive as strings, so only such a schema needs finiteOnly; the others (an id, the
 * selection lists) skip its pass over every value of every request.
 */
function coercesNumbers(schema: unknown): boolean {
  return /"(number|integer)"|"\$ref"/.test(JSON.stringify(schema) ?? '');
}

/** A number in a query string or path: decimal digits, with a sign and a fraction if any (none for an integer). */
const DECIMAL = /^-?\d+(\.\d+)?$/;
const INTEGER = /^-?\d+$/;

/** The names of a flat text part's properties typed integer: `?limit=5.0` is no way to write one. */
function integerNames(schema: unknown): Set<string> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  return new Set(Object.entries(properties).flatMap(([name, p]) => (p?.type === 'integer' ? [name] : [])));
}

/*
 * Ajv coerces any text JavaScript's Number() reads: "0x10" to 16, " 10" to 10, "1e3" to 1000, and "1e309" or
 * "Infinity" to Infinity, for which it then skips `maximum` (`?limit=1e309` listed everything). A coerced text part is
 * flat (name → value), so each value that became a number is checked against the text it came from.
 */
function decimalOnly(validate: ValidateFunction, integers: ReadonlySet<string>): ValidateFunction {
  const checked = ((data: unknown) => {
    const texts = typeof data === 'object' && data !== null ? { ...(data as Record<string, unknown>) } : undefined;
    const valid = validate(data);
    const errors = [...(validate.errors ?? [])];
    for (const [name, value] of Object.entries(texts ? (data as Record<string, unknown>) : {})) {
      const text = texts?.[name];
      // A value the request did not send (a schema default) has no text to check.
      if (typeof value !== 'number' || typeof text !== 'string') continue;
      const integer = integers.has(name);
      if ((integer ? INTEGER : DECIMAL).test(text) && Number.isFinite(value)) continue;
      // What the text is comes first: `?limit=1e3` is told it is no decimal, not that 1000 is above the maximum.
      const path = `/${name}`;
      for (let i = errors.length - 1; i >= 0; i -= 1) if (errors[i].instancePath === path) errors.splice(i, 1);
      const digits = integer
        ? 'must be written in decimal digits, with no fraction'
        : 'must be written in decimal digits';
      const message = Number.isFinite(value) ? digits : 'must be finite';
      errors.push({ instancePath: path, schemaPath: '#/type', keyword: 'type', params: {}, message });
    }
    checked.errors = errors.length > 0 ? errors : validate.errors;
    return valid && errors.length === 0;
  }) as ValidateFunction;
  return checked;
}

/*
 * Response schemas document the answers; they never shape them. Fastify would otherwise serialize with
 * fast-json-stringify, which drops properties a schema does not list and throws on missing required ones, while a
 * HAL body is whatever `fields` and `embedded` selected. JSON.stringify is what every route used before it declared
 * a response schema, and measured as fast on these bodies (README, "OpenAPI and the docs page"). It is Fastify's
 * serializer factory, not setSerializerCompiler: a context that adds shared schemas builds its compilers anew.
 */
export const serializerFactory: NonNullable<CompilersFactory['buildSerializer']> = () => () => (data) =>
  JSON.stringify(data);

/*
 * The same JSON.stringify as every route's reply serializer (app.setReplySerializer): with one, Fastify no longer
 * looks up the response schema's serializer for each answer, which parsed the answer's Content-Type to find it.
 */
export const replySerializer = (payload: unknown): string => JSON.stringify(payload);
