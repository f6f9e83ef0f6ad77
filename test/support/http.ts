import { TENANT_A_KEY } from './api-keys';

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  /** parsed JSON body, or undefined when the body is empty or not JSON */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary response shapes
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** raw body text, sent as is */
  raw?: string;
  headers?: Record<string, string>;
  key?: string | null;
}

/** A real HTTP request on loopback; the API key of tenant A unless told otherwise. */
export async function http(baseUrl: string, path: string, options: RequestOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? TENANT_A_KEY : options.key;
  if (key !== null) headers.authorization ??= `Bearer ${key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, {
    method: options.method ?? (body !== undefined ? 'POST' : 'GET'),
    headers,
    body,
    redirect: 'manual',
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}
