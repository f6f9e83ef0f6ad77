import { Agent, request as httpRequest } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../../src/lib/free-port';
import { DIST, run } from '../support/embedded-process';
import { TENANT_A_KEY, testBrokers, uniquePrefix } from '../support/test-service';

/*
 * The README's patient start: while a role waits for Kafka it holds PORT and answers /health/live 200, "so a liveness
 * probe does not restart a process in the middle of its patient start". That includes the moment the service's own
 * server takes the port over: it once closed the holding server and bound again once the app was ready, and probes
 * in between were refused or reset (1.1 s on a quiet machine, 5.5 s on a loaded one).
 */

/** A port that refuses connections until opened, then relays each to the shared test broker (its bootstrap). */
function lateBroker(port: number) {
  const [host, brokerPort] = testBrokers()[0].split(':');
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  return {
    open: () =>
      new Promise<void>((resolve) => {
        server = createServer((client) => {
          const upstream = connect({ host, port: Number(brokerPort) });
          for (const s of [client, upstream]) {
            sockets.add(s);
            s.on('error', () => undefined);
          }
          client.pipe(upstream).pipe(client);
        });
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    close: () => {
      for (const s of sockets) s.destroy();
      server?.close();
    },
  };
}

/** GETs on one kept-alive connection: each answer's status, and the local port (the same connection throughout). */
function keptConnection(port: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<{ status: number; localPort: number | undefined }>((resolve, reject) => {
      const headers = { authorization: `Bearer ${TENANT_A_KEY}` };
      const req = httpRequest(`http://127.0.0.1:${port}${path}`, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, localPort: req.socket?.localPort }));
      });
      req.on('error', reject);
      req.end();
    });
  return { get, close: () => agent.destroy() };
}

/**
 * One GET on a connection of its own (a probe's way): its status, or the error's code. What is proved is that no probe
 * is refused or reset; the timeout only bounds a probe, generously: a starting service on a machine with every core
 * busy answers some probes after seconds (2 s timed out three of them once, at a load average of 25).
 */
function probe(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent: false, timeout: 15000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

test('PORT answers /health/live 200 through the moment the service takes it over, on new and kept connections', async () => {
  const [kafkaPort, port] = [await freePort(), await freePort()];
  const broker = lateBroker(kafkaPort);
  const app = run([join(DIST, 'main.js'), 'api'], {
    KAFKA_BROKERS: `127.0.0.1:${kafkaPort}`,
    TOPIC_PREFIX: uniquePrefix('handover'),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    API_KEYS: `tenant-a:${TENANT_A_KEY}`,
  });
  const live = `http://127.0.0.1:${port}/health/live`;
  const answers: (number | string)[] = [];
  let servedByService = false;
  let stop = false;
  try {
    await app.waitFor(/waiting for Kafka at/, 30000);
    expect(await probe(live)).toBe(200);
    // Probes on connections of their own (a refused port shows), and through fetch's kept-alive connections.
    const fresh = async () => {
      while (!stop) answers.push(await probe(live));
    };
    const kept = async () => {
      while (!stop) answers.push(await fetch(live).then((r) => r.arrayBuffer().then(() => r.status), String));
    };
    const pollers = [fresh(), fresh(), fresh(), kept(), kept()];
    // One connection the holding server accepted, kept alive as a load balancer keeps its connections to a backend
    // (the holding server keeps it as long as the service would, HTTP_KEEP_ALIVE_TIMEOUT_MS).
    const lb = keptConnection(port);
    const starting = await lb.get('/tasks?limit=1');
    expect(starting.status).toBe(503);
    await broker.open();
    await app.waitFor(/hookstream is running/, 60000);
    // The service, not the holding server, answers now: a route the holding server answers 503 is the API's.
    for (let i = 0; i < 200 && !servedByService; i++) {
      const tasks = await fetch(`http://127.0.0.1:${port}/tasks`, {
        headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      });
      servedByService = tasks.status === 200;
      if (!servedByService) await new Promise((r) => setTimeout(r, 50));
    }
    const before = answers.length;
    while (answers.length < before + 20) await new Promise((r) => setTimeout(r, 20));
    stop = true;
    await Promise.all(pollers);
    expect(servedByService).toBe(true);
    expect(answers.length).toBeGreaterThan(20);
    expect(answers.filter((a) => a !== 200)).toEqual([]);
    // The service answers the API: so does the connection the holding server took, on its next request.
    const after = await lb.get('/tasks?limit=1');
    expect(after).toEqual({ status: 200, localPort: starting.localPort });
    lb.close();
    app.child.kill('SIGTERM');
    expect(await app.exitWithin(30000)).toBe(0);
  } finally {
    stop = true;
    app.child.kill('SIGKILL');
    broker.close();
  }
}, 90000);
