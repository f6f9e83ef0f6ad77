import { sleep } from '../lib/abortable-sleep';
import { defineTaskType } from '../tasks/task-type';

interface OrderReportInput {
  /** only orders with these statuses; all when absent */
  statuses?: string[];
  /** pause between orders, to make the report's progress visible in demos */
  delayMs?: number;
}

interface OrderReport {
  orders: number;
  items: number;
  byStatus: Record<string, { orders: number; items: number }>;
}

/** Reads the orders, streams progress, emits one output per status, returns the totals by status. */
export const orderReport = defineTaskType<OrderReportInput, OrderReport>({
  name: 'order-report',
  description:
    'Reads the orders (only those whose status is in `statuses`, when given), publishes one ' +
    'task.progress per order and one task.output per status, and succeeds with the totals: orders and items, ' +
    'overall and by status. ' +
    '`delayMs` waits between orders, to watch it in demos.',
  inputSchema: {
    type: 'object',
    properties: {
      statuses: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 100 },
      delayMs: { type: 'integer', minimum: 0, maximum: 10000 },
    },
    additionalProperties: false,
  },
  async run({ input, signal, progress, output, resources }) {
    const wanted = input.statuses ? new Set(input.statuses) : undefined;
    const orders = resources.list('orders').filter((o) => !wanted || wanted.has(String(o.data.status)));
    const report: OrderReport = { orders: 0, items: 0, byStatus: {} };
    // A status is client data: a Map keeps `__proto__` or `constructor` an ordinary status, never the prototype.
    const byStatus = new Map<string, { orders: number; items: number }>();
    for (const [i, order] of orders.entries()) {
      if (input.delayMs) await sleep(input.delayMs, signal);
      else if (signal.aborted) throw signal.reason;
      const status = String(order.data.status);
      const itemCount = Number(order.data.itemCount);
      const bucket = byStatus.get(status) ?? { orders: 0, items: 0 };
      byStatus.set(status, bucket);
      bucket.orders += 1;
      bucket.items += itemCount;
      report.orders += 1;
      report.items += itemCount;
      progress(i + 1, orders.length);
    }
    for (const [status, totals] of byStatus) output({ status, ...totals });
    return { ...report, byStatus: Object.fromEntries(byStatus) };
  },
});
