import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The Standard Webhooks headers for one message: `v1,` HMAC-SHA256 of `id.timestamp.body`. */
export function webhookHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const signature = webhookSignature(secret, id, timestampSeconds, body);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signature };
}

/**
 * The `webhook-signature` value alone. The body may be the bytes that are sent: the bridge encodes each body once,
 * for the HMAC and the POST, where signing `id.timestamp.body` as one string copied and encoded it a second time.
 */
export function webhookSignature(secret: string, id: string, timestampSeconds: number, body: string | Buffer): string {
  const hmac = createHmac('sha256', signingKey(secret)).update(`${id}.${timestampSeconds}.`);
  return `v1,${hmac.update(body).digest('base64')}`;
}

/** Decoded secrets: each callback of a subscription is signed with the same one. */
const keys = new Map<string, KeyObject>();
/** Bounded: past this many distinct secrets the oldest is dropped (and decoded again when next used). */
const MAX_KEYS = 1000;

function signingKey(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value as string);
    keys.set(secret, (key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))));
  }
  return key;
}
