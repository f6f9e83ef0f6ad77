import type { ResourceDeclaration } from './resource-declaration';

/** The spec's illustrative domain, declared: every convention is exercised on it. */
export const users: ResourceDeclaration = {
  name: 'user',
  collection: 'users',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    email: { type: 'string', format: 'email', maxLength: 320 },
  },
  required: ['name'],
  relations: {},
  seeds: [
    { id: 'u-ada', fields: { name: 'Ada Lovelace', email: 'ada@example.com' } },
    { id: 'u-grace', fields: { name: 'Grace Hopper', email: 'grace@example.com' } },
  ],
};

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
};

export const exampleDomain: ResourceDeclaration[] = [users, items, orders];
