import type { FastifyReply } from 'fastify';

/** Adds a request header to the answer's `Vary` (RFC 9110 §12.5.5), keeping what is there: several parts choose. */
export function addVary(reply: FastifyReply, header: string): void {
  const current = reply.getHeader('vary');
  if (current === undefined || current === '') {
    reply.header('vary', header);
    return;
  }
  const listed = String(current)
    .split(',')
    .map((h) => h.trim().toLowerCase());
  if (!listed.includes(header.toLowerCase()) && !listed.includes('*')) reply.header('vary', `${current}, ${header}`);
}
