import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ResourceStore } from '../../src/resources/resource-store';
import type { ConsumerRole } from '../../src/service';
import { TASKS_VIEW } from '../../src/tasks/task-snapshot';
import { startTaskRunner } from './task-runner-consumer';

/** The runner role: wires the task runner from the process's kernel. */
export const taskRunnerRole: ConsumerRole = {
  role: 'runner',
  async start({ kafka, config, logger, taskRegistry, metrics, tracer }) {
    // Task handlers read resources (order-report) through the same store the api writes them with.
    const resources = await ResourceStore.open(kafka, {
      publisher: kafka.publisher,
      resourcesTopic: kafka.topics.resources,
      domainEventsTopic: kafka.topics.domainEvents,
      timeoutMs: config.kafkaTimeoutMs,
    });
    return startTaskRunner({
      runGroupConsumer: (o) => kafka.runGroupConsumer(o),
      fencingPublisher: (id) => kafka.fencingPublisher(id),
      transactionalIdPrefix: `${config.topicPrefix}task-runner-p`,
      view: await kafka.view(TASKS_VIEW),
      topics: kafka.topics,
      registry: taskRegistry,
      resources: { list: (collection) => resources.list(collection) },
      logger,
      groupId: `${config.topicPrefix}task-runner`,
      runnerId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
      concurrency: config.taskConcurrency,
      taskTimeoutMs: config.taskTimeoutMs,
      kafkaTimeoutMs: config.kafkaTimeoutMs,
      partitionOfTask: (taskId) => kafka.partitionFor(kafka.topics.taskRequests, taskId),
      metrics,
      tracer,
    });
  },
};
