import type { ResourceDeclaration } from '../resources/resource-declaration';

/** The spec's illustrative order: `itemCount` a positive integer, relations to its author and items. */
export const orders: ResourceDeclaration = {
  name: 'order',
  collection: 'orders',
  properties: {
    orderNumber: { type: 'number' },
    // Spec: itemCount must be a positive integer; 0, -100, 1.3232, "42" and null are invalid.
    itemCount: { type: 'integer', minimum: 1 },
    status: { type: 'string', minLength: 1, maxLength: 64 },
  },
  required: ['orderNumber', 'itemCount', 'status'],
  relations: {
    author: { collection: 'users', many: false },
    items: { collection: 'items', many: true },
  },
  example: { orderNumber: 1, itemCount: 42, status: 'open', author: 'u-ada', items: ['i-widget', 'i-gadget'] },
};
