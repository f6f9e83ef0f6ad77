import type { TaskType } from './task-type';
import { countdown } from './types/countdown';
import { orderReport } from './types/order-report';

export const exampleTaskTypes = [countdown, orderReport] as TaskType[];
