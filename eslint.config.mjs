import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Each library behind its own room: kafkajs in src/kafka, OpenTelemetry in src/tracing, prom-client in src/metrics.
const KAFKAJS = { name: 'kafkajs', message: 'Only src/kafka/ imports kafkajs.' };
const PROM_CLIENT = { name: 'prom-client', message: 'Only src/metrics/ imports prom-client.' };
const OTEL = { group: ['@opentelemetry/*'], message: 'Only src/tracing/ imports OpenTelemetry.' };
const restrict = ({ kafkajs = true, promClient = true, otel = true }) => ['error', {
  paths: [...(kafkajs ? [KAFKAJS] : []), ...(promClient ? [PROM_CLIENT] : [])],
  patterns: otel ? [OTEL] : [],
}];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': restrict({}),
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['src/kafka/**/*.ts'], rules: { 'no-restricted-imports': restrict({ kafkajs: false }) } },
  { files: ['src/metrics/**/*.ts'], rules: { 'no-restricted-imports': restrict({ promClient: false }) } },
  { files: ['src/tracing/**/*.ts'], rules: { 'no-restricted-imports': restrict({ otel: false }) } },
  {
    // Tests play the user's part with a plain kafkajs client, and benchmarks measure one as a baseline, on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['src/**/*.ts', 'consumers/**/*.ts'],
    ignores: ['src/config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only src/config.ts reads the environment.' }],
    },
  },
);
