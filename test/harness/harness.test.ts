import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { startProxy } from './proxy.js';
import { startRedis, startRedisCluster, startRedisSentinel, stopAll } from './servers.js';
import { ms } from './timing.js';

after(stopAll);

/** A client that fails fast instead of queueing or retrying forever. */
function client(port: number, commandTimeout = ms(300)): Redis {
  const redis = new Redis({ host: '127.0.0.1', port, commandTimeout, maxRetriesPerRequest: 0, lazyConnect: true });
  redis.on('error', () => undefined); // connection errors are part of these tests
  return redis;
}

test('startRedis: ping, pause/resume, restart on the same port with empty data', async () => {
  const server = await startRedis();
  assert.equal(server.url, `redis://127.0.0.1:${server.port}`);
  const redis = client(server.port);
  try {
    await redis.connect();
    assert.equal(await redis.ping(), 'PONG');
    await redis.set('k', 'v');

    server.pause();
    await assert.rejects(redis.ping(), /timed out/i);
    server.resume();
    assert.equal(await redis.ping(), 'PONG');
    assert.equal(await redis.get('k'), 'v');
  } finally {
    redis.disconnect();
  }

  const { port, pid } = server;
  await server.restart();
  assert.equal(server.port, port);
  assert.notEqual(server.pid, pid);
  const fresh = client(server.port);
  try {
    await fresh.connect();
    assert.equal(await fresh.get('k'), null);
    assert.equal(await fresh.dbsize(), 0);
  } finally {
    fresh.disconnect();
  }
  await server.stop();
});

test('startRedisCluster(3): ioredis Cluster can set and get across slots', async () => {
  const cluster = await startRedisCluster(3);
  assert.equal(cluster.nodes.length, 3);
  assert.equal(cluster.url, `redis+cluster://${cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`);
  const redis = new Cluster(cluster.nodes.map((n) => ({ host: n.host, port: n.port })));
  redis.on('error', () => undefined);
  try {
    // Distinct keys land on different slots (and so, usually, nodes).
    const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];
    for (const key of keys) await redis.set(key, `value-${key}`);
    for (const key of keys) assert.equal(await redis.get(key), `value-${key}`);
  } finally {
    redis.disconnect();
  }
  await cluster.stop();
});

test('startRedisSentinel: ioredis resolves mymaster through the sentinels', async () => {
  const setup = await startRedisSentinel();
  assert.equal(setup.sentinels.length, 2);
  assert.equal(
    setup.url,
    `redis+sentinel://${setup.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/mymaster`,
  );
  const redis = new Redis({
    sentinels: setup.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: 'mymaster',
    lazyConnect: true,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.set('through-sentinel', 'yes');
    assert.equal(await redis.get('through-sentinel'), 'yes');
  } finally {
    redis.disconnect();
  }
  // The write went to the master (and replicates to the replica).
  const direct = client(setup.master.port);
  try {
    await direct.connect();
    assert.equal(await direct.get('through-sentinel'), 'yes');
  } finally {
    direct.disconnect();
  }
  await setup.stop();
});

test('proxy: forwards, delays, pause holds replies until resume, drops connections', async () => {
  const server = await startRedis();
  const proxy = await startProxy(server.port);
  const redis = client(proxy.port);
  try {
    await redis.connect();
    assert.equal(await redis.ping(), 'PONG');

    proxy.setDelay(ms(100));
    const started = performance.now();
    assert.equal(await redis.ping('delayed'), 'delayed');
    // Delayed on the way there and on the way back.
    assert.ok(performance.now() - started >= ms(190), 'round trip should include both delays');
    proxy.setDelay(0);

    proxy.pause();
    await assert.rejects(redis.ping(), /timed out/i);
    const heldReply = redis.echo('held');
    let settled = false;
    void heldReply.then(() => (settled = true), () => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, ms(100)));
    assert.equal(settled, false, 'no reply may pass while paused');
    proxy.resume();
    // commandTimeout may have expired for `held` meanwhile, so just check the
    // connection is healthy and in order again.
    await heldReply.catch(() => undefined);
    assert.equal(await redis.ping('after-resume'), 'after-resume');

    const closed = new Promise<void>((resolve) => redis.once('close', () => resolve()));
    proxy.dropConnections();
    await closed;
  } finally {
    redis.disconnect();
    await proxy.close();
  }
});
