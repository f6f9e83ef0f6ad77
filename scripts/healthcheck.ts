/*
 * The container healthcheck: every role serves GET /health/ready on PORT.
 * It reads PORT through the config module, the only reader of the environment.
 */
import { loadConfig } from '../src/config';

const { port } = loadConfig();
fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(2500) })
  .then((res) => process.exit(res.ok ? 0 : 1))
  .catch(() => process.exit(1));
