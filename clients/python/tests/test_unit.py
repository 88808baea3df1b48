"""Unit tests of baton_client that need no server: python3 -m unittest discover -s clients/python/tests"""
import os
import sys
import tempfile
import threading
import time
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
if "BATON_CLIENT_INSTALLED" not in os.environ:
    sys.path.insert(0, os.path.dirname(HERE))

import baton_client  # noqa: E402
from baton_client.lease import Lease, LostEvent, safety_margin  # noqa: E402

SCALE = float(os.environ.get("BATON_TEST_TIMING") or 1)


def grant(name="orders/42", token="7"):
    return {"leaseId": "opaque", "name": name, "token": token, "expiresAt": 0, "ttlMs": 1000, "owner": "digest", "mode": "exclusive"}


class LostEventTest(unittest.TestCase):
    def test_is_set_once_the_deadline_passed_without_any_thread_running(self):
        # What a process resumed after SIGSTOP sees on its first look: no renewal
        # thread has had a turn, and the lease is still reported lost.
        event = LostEvent()
        event._arm(time.monotonic() - 0.001)
        self.assertTrue(event.is_set())
        self.assertIn("monotonic clock", event.reason or "")
        self.assertTrue(event.wait(0))

    def test_not_set_before_the_deadline(self):
        event = LostEvent()
        event._arm(time.monotonic() + 60 * SCALE)
        self.assertFalse(event.is_set())
        self.assertFalse(event.wait(0.01))

    def test_wait_wakes_at_the_deadline_with_nobody_setting_it(self):
        event = LostEvent()
        event._arm(time.monotonic() + 0.05)
        self.assertTrue(event.wait(30 * SCALE))

    def test_a_renewal_moves_the_deadline_for_a_waiter(self):
        event = LostEvent()
        event._arm(time.monotonic() + 0.05)
        event._arm(time.monotonic() + 60 * SCALE)
        self.assertFalse(event.wait(0.2))

    def test_set_by_the_server_keeps_the_first_reason(self):
        event = LostEvent()
        event._lose("forced")
        event._lose("later")
        self.assertTrue(event.is_set())
        self.assertEqual(event.reason, "forced")

    def test_disarmed_never_fires(self):
        event = LostEvent()
        event._arm(time.monotonic() - 1)
        event._disarm()
        event._arm(time.monotonic() - 1)  # a renewal answered after the release
        self.assertFalse(event.is_set())

    def test_is_a_threading_event(self):
        self.assertIsInstance(LostEvent(), threading.Event)


class LeaseTest(unittest.TestCase):
    def test_check_raises_lease_lost_after_the_deadline(self):
        lease = Lease(client=None, grant=grant(), ttl=1.0, renew=False)  # type: ignore[arg-type]
        lease.lost._arm(time.monotonic() - 0.001)
        self.assertFalse(lease.held)
        self.assertTrue(lease.is_lost())
        with self.assertRaises(baton_client.LeaseLostError):
            lease.check()
        self.assertEqual(lease.remaining(), 0.0)

    def test_token_is_an_int_even_past_2_to_the_53(self):
        lease = Lease(client=None, grant=grant(token="9007199254740993"), ttl=1.0, renew=False)  # type: ignore[arg-type]
        self.assertEqual(lease.token, 2**53 + 1)

    def test_safety_margin(self):
        self.assertAlmostEqual(safety_margin(30), 0.31)
        self.assertAlmostEqual(safety_margin(0.02), 0.005)


class FencingTest(unittest.TestCase):
    def test_unreserved_names_are_sent_as_they_are(self):
        self.assertEqual(baton_client.fencing_headers("orders-42_a.b~c", 9),
                         {"Baton-Lock": "orders-42_a.b~c", "Baton-Fencing-Token": "9"})

    def test_other_characters_are_percent_encoded_utf8(self):
        headers = baton_client.fencing_headers("orders/42 é✓", 2**64)
        self.assertEqual(headers["Baton-Lock"], "orders%2F42%20%C3%A9%E2%9C%93")
        self.assertEqual(headers["Baton-Fencing-Token"], str(2**64))

    def test_bad_tokens_are_refused(self):
        for token in (-1, True, "7", 1.5):
            with self.assertRaises(baton_client.InvalidArgumentError):
                baton_client.fencing_headers("a", token)  # type: ignore[arg-type]

    def test_lease_helper(self):
        lease = Lease(client=None, grant=grant(name="a b"), ttl=1.0, renew=False)  # type: ignore[arg-type]
        self.assertEqual(lease.fencing_headers(), {"Baton-Lock": "a%20b", "Baton-Fencing-Token": "7"})


class ErrorsTest(unittest.TestCase):
    def test_every_code_has_its_class(self):
        for code, cls in baton_client.ERRORS.items():
            error = baton_client.errors.error_for(code, "m", 400)
            self.assertIs(type(error), cls)
            self.assertEqual(error.code, code)
            self.assertIsInstance(error, baton_client.BatonError)

    def test_unknown_codes_stay_readable(self):
        error = baton_client.errors.error_for("SOMETHING_NEW", "m", 418)
        self.assertEqual((type(error), error.code, error.status), (baton_client.BatonError, "SOMETHING_NEW", 418))

    def test_python_bases(self):
        self.assertTrue(issubclass(baton_client.LockTimeoutError, TimeoutError))
        self.assertTrue(issubclass(baton_client.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(baton_client.BackendUnavailableError, ConnectionError))


class ArgumentsTest(unittest.TestCase):
    def test_bad_urls_and_tokens(self):
        for url in ("127.0.0.1:7420", "ftp://x", "http://", "http://h?x=1", 7420):
            with self.assertRaises(baton_client.InvalidArgumentError, msg=url):
                baton_client.Client(url)  # type: ignore[arg-type]
        for token in ("", "a\nb", 5):
            with self.assertRaises(baton_client.InvalidArgumentError, msg=repr(token)):
                baton_client.Client("http://127.0.0.1:1", token=token)  # type: ignore[arg-type]

    def test_bad_names_and_durations_never_reach_the_server(self):
        # Port 1: nothing listens, so reaching the network would be BackendUnavailableError.
        client = baton_client.Client("http://127.0.0.1:1")
        for name in ("", None, 42):
            with self.assertRaises(baton_client.InvalidArgumentError):
                client.lock(name)  # type: ignore[arg-type]
        for ttl in (0, -1, float("nan"), float("inf"), "30s", True):
            with self.assertRaises(baton_client.InvalidArgumentError, msg=repr(ttl)):
                client.lock("a", ttl=ttl)  # type: ignore[arg-type]
        for wait in (-1, "10s", float("nan")):
            with self.assertRaises(baton_client.InvalidArgumentError, msg=repr(wait)):
                client.lock("a", wait=wait)  # type: ignore[arg-type]
        for permits, weight in ((0, 1), (2, 3), (2, 0), (1.5, 1)):
            with self.assertRaises(baton_client.InvalidArgumentError):
                client.semaphore("a", permits, weight)  # type: ignore[arg-type]

    def test_an_unreachable_server_is_backend_unavailable(self):
        client = baton_client.Client("http://127.0.0.1:1", timeout=2)
        with self.assertRaises(baton_client.BackendUnavailableError):
            client.lock("a", wait=0)

    def test_closed_client(self):
        client = baton_client.Client("http://127.0.0.1:1")
        client.close()
        with self.assertRaises(baton_client.ClosedError):
            client.lock("a")


class BackendTest(unittest.TestCase):
    """The in-tree build backend: a wheel of the package, built with the standard library."""

    def test_builds_a_wheel_with_the_package_and_its_record(self):
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "_build"))
        try:
            import backend  # type: ignore[import-not-found]
        finally:
            sys.path.pop(0)
        with tempfile.TemporaryDirectory() as out:
            name = backend.build_wheel(out)
            with zipfile.ZipFile(os.path.join(out, name)) as wheel:
                names = set(wheel.namelist())
                record = wheel.read("baton_client-0.1.0.dist-info/RECORD").decode()
        self.assertIn("baton_client/__init__.py", names)
        self.assertIn("baton_client/py.typed", names)
        self.assertIn("baton_client/client.py,sha256=", record)


if __name__ == "__main__":
    unittest.main()
