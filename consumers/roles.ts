import type { ConsumerRole } from '../src/service';
import { callbackBridgeRole } from './callback-bridge/callback-bridge-role';
import { taskRunnerRole } from './task-runner/task-runner-role';

/** Every role besides the api, for the entry point (src/main.ts) to run as ROLE asks. */
export const CONSUMER_ROLES: readonly ConsumerRole[] = [taskRunnerRole, callbackBridgeRole];
