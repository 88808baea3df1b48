/**
 * The port picker: the ports it hands out are in range and never the same
 * twice in one process, so a server given several (ZooKeeper's client,
 * quorum and election ports; etcd's peer ports; a Redis Cluster bus port)
 * never gets a config it refuses for a collision.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkPorts, freePort, freePorts, HIGHEST_PORT, LOWEST_PORT } from './ports.js';

test('freePort never hands out a port twice, and each is in range', async () => {
  // The kernel picks at random among ~28,000 ephemeral ports: among 3,000
  // picks of a picker that does not remember, some port comes twice.
  const seen = new Map<number, number>();
  for (let i = 0; i < 3000; i++) {
    const port = await freePort();
    assert.ok(port >= LOWEST_PORT && port <= HIGHEST_PORT, `port ${port} in range`);
    assert.equal(seen.get(port), undefined, `port ${port} handed out at pick ${seen.get(port)} and again at pick ${i}`);
    seen.set(port, i);
  }
});

test('freePorts gives distinct ports in range; checkPorts refuses a collision or a port out of range', async () => {
  const ports = await freePorts(12);
  assert.equal(new Set(ports).size, 12);
  checkPorts(ports);
  assert.throws(() => checkPorts([ports[0]!, ports[1]!, ports[0]!]), /collide/);
  assert.throws(() => checkPorts([80]), /out of range/);
  assert.throws(() => checkPorts([65536]), /out of range/);
});
