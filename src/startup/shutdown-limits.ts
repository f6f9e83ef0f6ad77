/**
 * A shutdown that takes longer exits 1 without finishing. A container runtime's grace before its SIGKILL must be
 * longer (docker-compose.yml's stop_grace_period): Docker's default, 10 s, is shorter than a stop against a Kafka that
 * does not answer.
 */
export const SHUTDOWN_LIMIT_MS = 30000;
/** The service's part of it, so the embedded broker's stop (then SIGKILL) still fits in the limit. */
export const SERVICE_STOP_LIMIT_MS = 15000;
