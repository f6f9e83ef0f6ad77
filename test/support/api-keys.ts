/**
 * The test tenants' API keys, in a module of their own: the unit tier needs them without loading the service (and
 * kafkajs) that test-service.ts starts.
 */
export const TENANT_A_KEY = 'key-tenant-a-0123456789';
export const TENANT_B_KEY = 'key-tenant-b-0123456789';
