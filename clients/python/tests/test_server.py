"""baton_client against a real `baton serve`: run by test/clients/python.test.ts,
which starts the server and sets BATON_TEST_SERVER (and BATON_TEST_TOKEN, a token
whose rights cover the names under "py/"). Skipped without a server."""
import json
import os
import secrets
import sys
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
if "BATON_CLIENT_INSTALLED" not in os.environ:
    sys.path.insert(0, os.path.dirname(HERE))

import baton_client  # noqa: E402

SERVER = os.environ.get("BATON_TEST_SERVER")
TOKEN = os.environ.get("BATON_TEST_TOKEN")
SCALE = float(os.environ.get("BATON_TEST_TIMING") or 1)


def fresh(prefix="py/"):
    return prefix + secrets.token_hex(6)


@unittest.skipUnless(SERVER, "needs BATON_TEST_SERVER (run by npm test)")
class ServerTest(unittest.TestCase):
    def setUp(self):
        self.client = baton_client.Client(SERVER, token=TOKEN)

    def tearDown(self):
        self.client.close()

    def test_a_lock_is_held_renewed_past_its_ttl_and_released(self):
        name = fresh()
        ttl = 0.6 * SCALE
        with self.client.lock(name, ttl=ttl, wait=5 * SCALE) as lease:
            self.assertIsInstance(lease.token, int)
            time.sleep(3 * ttl)  # lives only if the background thread renews it
            self.assertTrue(lease.held)
            holders = self.client.inspect(name)["holders"]
            self.assertEqual([h["token"] for h in holders], [str(lease.token)])
            with self.assertRaises(baton_client.LockTimeoutError):
                self.client.lock(name, wait=0)
        self.assertFalse(lease.held)
        self.assertFalse(lease.lost.is_set(), "released is not lost")
        self.assertIsNone(self.client.inspect(name))

    def test_many_leases_share_one_session(self):
        ttl = 0.9 * SCALE
        leases = [self.client.lock(fresh(), ttl=ttl) for _ in range(5)]
        time.sleep(3 * ttl)
        self.assertTrue(all(lease.held for lease in leases))
        self.assertTrue(all(lease._joined for lease in leases), "renewed through the session")
        for lease in leases:
            self.assertTrue(lease.release())

    def test_waits_and_is_handed_the_lock(self):
        name = fresh()
        first = self.client.lock(name, ttl=30)
        threading.Timer(0.2, first.release).start()
        with self.client.lock(name, ttl=30, wait=30 * SCALE) as second:
            self.assertGreater(second.token, first.token)

    def test_read_write_and_semaphore(self):
        name = fresh()
        with self.client.read(name) as r1, self.client.read(name) as r2:
            self.assertEqual((r1.mode, r2.mode), ("read", "read"))
            with self.assertRaises(baton_client.LockTimeoutError):
                self.client.write(name, wait=0)
        with self.client.write(name, wait=0) as w:
            self.assertEqual(w.mode, "write")
        sem = fresh()
        heavy = self.client.semaphore(sem, permits=3, weight=2)
        light = self.client.semaphore(sem, permits=3, weight=1, wait=0)
        with self.assertRaises(baton_client.LockTimeoutError):
            self.client.semaphore(sem, permits=3, weight=1, wait=0)
        self.assertTrue(heavy.release() and light.release())

    def test_election(self):
        election = self.client.election(fresh())
        self.assertIsNone(election.leader())
        term = election.campaign("host-a", ttl=30)
        self.assertEqual(election.leader()["value"], "host-a")
        self.assertEqual(election.leader()["token"], term.token)
        election.proclaim(term, "host-a:2")
        self.assertEqual(election.leader()["value"], "host-a:2")
        other = baton_client.Client(SERVER, token=TOKEN)
        try:
            threading.Timer(0.2, lambda: election.resign(term)).start()
            with other.election(election.name).campaign("host-b", wait=30 * SCALE) as next_term:
                self.assertGreater(next_term.token, term.token)
                self.assertEqual(election.leader()["value"], "host-b")
        finally:
            other.close()

    def test_forced_release_is_seen_as_lost(self):
        name = fresh()
        lease = self.client.lock(name, ttl=3 * SCALE)
        self.assertTrue(self.client.force_release(name))
        self.assertTrue(lease.lost.wait(30 * SCALE))
        self.assertIn("server", lease.lost_reason)
        with self.assertRaises(baton_client.LeaseLostError):
            lease.check()
        self.assertFalse(lease.release(), "nothing left to release")

    def test_bad_names_are_invalid_argument(self):
        for name in ("a\x00b", "x" * 5000, "{braces}"):
            with self.assertRaises(baton_client.InvalidArgumentError) as caught:
                self.client.lock("py/" + name, wait=0)
            self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")

    def test_a_wrong_token_is_unauthorized(self):
        with baton_client.Client(SERVER, token="wrong-token-wrong-token-0123") as stranger:
            with self.assertRaises(baton_client.UnauthorizedError) as caught:
                stranger.lock(fresh(), wait=0)
            self.assertEqual((caught.exception.status, caught.exception.code), (401, "UNAUTHORIZED"))

    def test_a_name_outside_the_token_is_forbidden(self):
        with self.assertRaises(baton_client.ForbiddenError) as caught:
            self.client.lock(fresh("elsewhere/"), wait=0)
        self.assertEqual(caught.exception.status, 403)


@unittest.skipUnless(SERVER, "needs BATON_TEST_SERVER (run by npm test)")
class OpenApiContractTest(unittest.TestCase):
    """The server's /openapi.json is the contract: what this client sends and reads is in it."""

    @classmethod
    def setUpClass(cls):
        with urllib.request.urlopen(SERVER + "/openapi.json", timeout=30) as response:
            cls.document = json.loads(response.read())

    def schema(self, ref):
        return self.document["components"]["schemas"][ref.rsplit("/", 1)[-1]]

    def body(self, path, method="post"):
        operation = self.document["paths"][path][method]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        return schema.get("properties", {})

    def test_every_error_code_of_the_server_has_a_class(self):
        codes = set(self.schema("Error")["properties"]["error"]["properties"]["code"]["enum"])
        self.assertEqual(codes - set(baton_client.ERRORS), set(), "codes without a typed error")

    def test_the_routes_and_fields_the_client_uses_are_declared(self):
        sent = {
            "/v1/locks/{name}/acquire": {"ttl", "wait", "mode", "fair", "permits", "weight", "waitId", "requestId", "session", "description"},
            "/v1/elections/{name}/campaign": {"ttl", "wait", "value", "waitId", "requestId", "session", "description"},
            "/v1/elections/{name}/proclaim": {"leaseId", "value"},
            "/v1/elections/{name}/resign": {"leaseId"},
            "/v1/leases/extend": {"leases", "ttl", "session"},
            "/v1/leases/release": {"leaseId"},
            "/v1/sessions": {"ttl"},
            "/v1/sessions/keepalive": {"sessionId", "giveUp"},
        }
        for path, fields in sent.items():
            self.assertEqual(fields - set(self.body(path)), set(), path)
        self.assertIn("delete", self.document["paths"]["/v1/sessions/{sessionId}"])
        self.assertIn("get", self.document["paths"]["/v1/elections/{name}"])
        self.assertIn("delete", self.document["paths"]["/v1/locks/{name}"])

    def test_the_answers_the_client_reads_are_declared(self):
        grant = self.schema("Grant")
        self.assertLessEqual({"leaseId", "name", "token", "ttlMs", "owner", "mode"}, set(grant["required"]))
        keepalive = self.schema("Keepalive")
        self.assertLessEqual({"ttlMs", "leases", "lost"}, set(keepalive["required"]))
        result = self.schema("ExtendResult")["properties"]
        self.assertEqual(set(result["status"]["enum"]), {"extended", "lost", "forbidden"})
        acquire = self.document["paths"]["/v1/locks/{name}/acquire"]["post"]["responses"]
        self.assertIn("202", acquire)  # still waiting: sent again with its waitId


if __name__ == "__main__":
    unittest.main()
