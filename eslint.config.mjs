import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * The rooms' boundaries, held by no-restricted-imports. ESLint replaces a rule's options per matching block rather than
 * merging them, so every block states its room's full list, built by `restrict`.
 * - Each library behind its own room: kafkajs in src/kafka, OpenTelemetry in src/tracing, prom-client in src/metrics.
 * - Dependencies point one way (DESIGN.md): consumers → src, never back. Only the entry point, src/main.ts, names the
 *   roles in consumers/ and the development broker in src/embedded-kafka/.
 * - src/problems/ is the vocabulary below everything that reports errors: no Fastify, no Kafka, no other room.
 * - The runner and the bridge (consumers/) do not load the HTTP layer (src/http/, src/app.ts).
 */
const KAFKAJS = { name: 'kafkajs', message: 'Only src/kafka/ imports kafkajs.' };
const PROM_CLIENT = { name: 'prom-client', message: 'Only src/metrics/ imports prom-client.' };
const OTEL = { group: ['@opentelemetry/*'], message: 'Only src/tracing/ imports OpenTelemetry.' };
const CONSUMERS = {
  group: ['**/consumers/**'],
  message: 'consumers → src, never back: only src/main.ts names the roles.',
};
const EMBEDDED = {
  group: ['**/embedded-kafka/*'],
  message: 'The development broker is started by src/main.ts only, never by the runtime.',
};
const FASTIFY = { group: ['fastify', 'fastify-plugin', '@fastify/*'], message: 'src/problems/ does not load Fastify.' };
const ROOMS = { group: ['../*', '!../problems'], message: 'src/problems/ imports no other room.' };
const HTTP = {
  group: ['**/src/http/*', '**/src/app'],
  message: 'The runner and the bridge do not load the HTTP layer.',
};

const restrict = ({
  kafkajs = true,
  promClient = true,
  otel = true,
  src = false,
  problems = false,
  consumer = false,
}) => [
  'error',
  {
    paths: [...(kafkajs ? [KAFKAJS] : []), ...(promClient ? [PROM_CLIENT] : [])],
    patterns: [
      ...(otel ? [OTEL] : []),
      ...(src ? [CONSUMERS, EMBEDDED] : []),
      ...(problems ? [FASTIFY, ROOMS] : []),
      ...(consumer ? [HTTP, EMBEDDED] : []),
    ],
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test-output/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Prettier lays code out within 120 columns but cannot break a string or a comment: those are held here.
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
      'no-restricted-imports': restrict({}),
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        module: 'writable',
        require: 'readonly',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['src/**/*.ts'], ignores: ['src/main.ts'], rules: { 'no-restricted-imports': restrict({ src: true }) } },
  { files: ['src/kafka/**/*.ts'], rules: { 'no-restricted-imports': restrict({ kafkajs: false, src: true }) } },
  { files: ['src/metrics/**/*.ts'], rules: { 'no-restricted-imports': restrict({ promClient: false, src: true }) } },
  { files: ['src/tracing/**/*.ts'], rules: { 'no-restricted-imports': restrict({ otel: false, src: true }) } },
  { files: ['src/problems/**/*.ts'], rules: { 'no-restricted-imports': restrict({ src: true, problems: true }) } },
  { files: ['consumers/**/*.ts'], rules: { 'no-restricted-imports': restrict({ consumer: true }) } },
  {
    // Tests play the user's part with a plain kafkajs client, and benchmarks measure one as a baseline, on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['src/**/*.ts', 'consumers/**/*.ts'],
    ignores: ['src/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only src/config.ts reads the environment.' },
      ],
    },
  },
);
