#!/usr/bin/env python3
"""A lock from a baton server, in Python with the standard library only.

    python3 baton_lock.py NAME [SECONDS]

waits for the lock NAME (as long as it takes), holds it for SECONDS (default 5)
while a thread renews the lease, hands the fencing token to the resource it
protects, and releases the lock. Settings come from the environment:

    BATON_SERVER   the server (default http://127.0.0.1:7420)
    BATON_TOKEN    a bearer token, if the server runs with --tokens
    BATON_TTL      the lease length (default 30s); renewed every third of it

Copy the BatonLock class into your program; the rest is the demonstration.
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


class BatonError(Exception):
    """An error answer of the server: code is one of the API's codes (LOCK_TIMEOUT, LEASE_LOST, ...)."""

    def __init__(self, status, code, message):
        super().__init__(f"{code} ({status}): {message}")
        self.status, self.code = status, code


class BatonLock:
    """with BatonLock('orders/42') as lease: ... lease['token'] ...

    Waits until granted, renews the lease while the block runs, releases at the end.
    `lost` is set if a renewal finds the lease gone: stop using the resource then.
    """

    def __init__(self, name, ttl=None, wait_s=None, server=None, token=None):
        self.name = name
        self.ttl = ttl or os.environ.get("BATON_TTL", "30s")
        self.wait_s = wait_s  # None: wait as long as it takes
        self.server = (server or os.environ.get("BATON_SERVER", "http://127.0.0.1:7420")).rstrip("/")
        self.token = token if token is not None else os.environ.get("BATON_TOKEN")
        self.lease = None
        self.renewals = 0
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._renewer = None

    def _call(self, method, path, body=None, timeout=10):
        headers = {} if body is None else {"content-type": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read() or b"{}").get("error", {})
            raise BatonError(error.code, answer.get("code", "?"), answer.get("message", "")) from None

    def acquire(self):
        path = "/v1/locks/" + urllib.parse.quote(self.name, safe="") + "/acquire"
        deadline = None if self.wait_s is None else time.monotonic() + self.wait_s
        while True:
            # Long-polls of at most 45 s, under the idle timeouts of proxies and the
            # server's own cap: the server answers the moment the lock is ours.
            left = 45.0 if deadline is None else min(45.0, max(0.0, deadline - time.monotonic()))
            try:
                answer = self._call("POST", path, {"ttl": self.ttl, "wait": int(left * 1000)}, timeout=left + 10)
                if answer and "leaseId" in answer:
                    self.lease = answer
                    break
                continue  # an answer without a lease (still waiting): poll again
            except BatonError as error:
                # 409 LOCK_TIMEOUT: still held when this poll ended; 429/503: the server asks us to come back.
                if error.status not in (409, 429, 503) or (deadline is not None and time.monotonic() >= deadline):
                    raise
                if error.status != 409:
                    time.sleep(1)
        self._renewer = threading.Thread(target=self._renew, daemon=True)
        self._renewer.start()
        return self.lease

    def _renew(self):
        while not self._stop.wait(self.lease["ttlMs"] / 3000):
            try:
                self.lease.update(self._call("POST", f"/v1/leases/{self.lease['leaseId']}/extend", {}))
                self.renewals += 1
            except BatonError as error:
                if error.status == 410:  # LEASE_LOST: expired or taken by force
                    self.lost.set()
                    return
            except OSError:
                pass  # the server did not answer: try again at the next third of the ttl

    def release(self):
        self._stop.set()
        if self._renewer:
            self._renewer.join()
        return self._call("DELETE", f"/v1/leases/{self.lease['leaseId']}")["released"]

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.released = self.release()
        return False


class Ledger:
    """The resource the lock protects. It remembers the highest fencing token it has
    seen and refuses writes with a smaller one: a holder that lost its lease
    without knowing (a long pause) can not overwrite a newer holder's work."""

    def __init__(self, path):
        self.path = path

    def write(self, line, fencing_token):
        last = 0
        if os.path.exists(self.path):
            with open(self.path) as f:
                last = max([int(l.split()[0]) for l in f if l.strip()] or [0])
        if int(fencing_token) < last:
            raise RuntimeError(f"stale fencing token {fencing_token} < {last}: refused")
        with open(self.path, "a") as f:
            f.write(f"{fencing_token} {line}\n")


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "demo/python"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    ledger = Ledger(os.environ.get("LEDGER", "ledger.txt"))
    lock = BatonLock(name)
    print(json.dumps({"step": "waiting", "name": name}), flush=True)
    with lock as lease:
        print(json.dumps({"step": "granted", "token": lease["token"]}), flush=True)
        ledger.write(f"pid {os.getpid()} holds {name}", lease["token"])
        end = time.monotonic() + seconds
        while time.monotonic() < end and not lock.lost.is_set():
            time.sleep(0.05)
        if lock.lost.is_set():
            print(json.dumps({"step": "lost"}), flush=True)
            sys.exit(70)
    print(json.dumps({"step": "released", "released": lock.released, "renewals": lock.renewals}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except BatonError as error:
        print(f"baton_lock.py: {error}", file=sys.stderr)
        sys.exit(75 if error.code == "LOCK_TIMEOUT" else 1)
