import type { ResourceDeclaration } from '../../src/resources/resource-declaration';

/** An invoice bills one order: its own fields, and a relation to the order it bills. */
export const invoices: ResourceDeclaration = {
  name: 'invoice',
  collection: 'invoices',
  properties: {
    amount: { type: 'number', exclusiveMinimum: 0 },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
  },
  required: ['amount', 'currency'],
  relations: {
    order: { collection: 'orders', many: false, required: true },
  },
};
