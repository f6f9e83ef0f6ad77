import type { ResourceDeclaration } from '../resources/resource-declaration';

/** The authors of orders (the spec's illustrative `author` relation). */
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
