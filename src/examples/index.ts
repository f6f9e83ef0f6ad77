import type { ResourceDeclaration } from '../resources/resource-declaration';
import type { TaskType } from '../tasks/task-type';
import { countdown } from './countdown';
import { items } from './items';
import { orderReport } from './order-report';
import { orders } from './orders';
import { users } from './users';

/*
 * The example domain (the spec's illustrative resources) and task types, registered as a team registers its own:
 * one file declares a resource or a task type, one line here lists it. src/main.ts runs what these lists hold.
 */
export const exampleResources: ResourceDeclaration[] = [users, items, orders];

export const exampleTaskTypes: TaskType[] = [countdown, orderReport] as TaskType[];
