import type { ResourceDeclaration } from '../resources/resource-declaration';

/** What orders hold (the spec's illustrative `items` relation). */
export const items: ResourceDeclaration = {
  name: 'item',
  collection: 'items',
  properties: {
    sku: { type: 'string', minLength: 1, maxLength: 64 },
    title: { type: 'string', minLength: 1, maxLength: 200 },
    price: { type: 'number', minimum: 0 },
  },
  required: ['sku', 'title'],
  relations: {},
  seeds: [
    { id: 'i-widget', fields: { sku: 'WID-1', title: 'Widget', price: 2.5 } },
    { id: 'i-gadget', fields: { sku: 'GAD-1', title: 'Gadget', price: 12 } },
    { id: 'i-gizmo', fields: { sku: 'GIZ-1', title: 'Gizmo', price: 7.25 } },
  ],
};
