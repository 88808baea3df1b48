"""The client: locks, read-write locks, semaphores and elections of a baton
server, renewed in the background through one server session per client."""
from __future__ import annotations

import math
import secrets
import ssl
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ._http import Transport, quote_name
from .errors import (
    BackendUnavailableError, BatonError, ClosedError, InvalidArgumentError, NotFoundError,
    LockTimeoutError, TooManyWaitersError, QuotaExceededError,
)
from .lease import Lease, safety_margin

#: A plain JSON long-poll lasts at most the server's --poll-max (50 s by default),
#: then answers 202 and is sent again; the socket may stay quiet that long.
LONGEST_POLL = 50.0
#: Grace for an answer beyond the time the server may take.
ANSWER_GRACE = 15.0
#: "Wait as long as it takes" is sent as waits of this length, one after another.
ENDLESS_WAIT = 3600.0


def _seconds(value: Any, what: str, minimum: float = 0.0, allow_none: bool = False) -> Optional[float]:
    """A duration in seconds (int or float), checked here so a bad one never reaches the server."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgumentError(f'"{what}" must be a number of seconds, got {value!r}')
    if value < minimum:
        raise InvalidArgumentError(f'"{what}" must be at least {minimum} s, got {value!r}')
    return float(value)


def _ms(seconds: float) -> int:
    return max(0, int(round(seconds * 1000)))


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a lock name must be a non-empty string, got {name!r}")
    return name


class Client:
    """``Client("http://127.0.0.1:7420", token=None)``: a client of one baton server.

    Durations are seconds. Leases taken with ``renew=True`` (the default) are
    renewed by one background thread per client through a server session: one
    keepalive per third of the shortest ttl, whatever the number of leases.
    ``close()`` (or leaving ``with Client(...)``) releases the leases it renews.
    """

    def __init__(self, url: str = "http://127.0.0.1:7420", token: Optional[str] = None, *,
                 timeout: float = 10.0, session_ttl: float = 60.0, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self._timeout = _seconds(timeout, "timeout", 0.001) or 10.0
        self._session_ttl = _seconds(session_ttl, "session_ttl", 1.0) or 60.0
        self._http = Transport(url, token, self._timeout, ssl_context)
        self._renewer = _Renewer(self)
        self._closed = False

    @property
    def url(self) -> str:
        return self._http.base

    # -- locks -----------------------------------------------------------------------

    def lock(self, name: str, ttl: float = 30, wait: Optional[float] = 10, *, fair: bool = False,
             renew: bool = True, description: Optional[str] = None) -> Lease:
        """An exclusive lock. ``wait``: seconds to wait (0: answer at once; None: as long as it
        takes). Raises LockTimeoutError when not granted in time. Use as ``with client.lock(...) as lease``."""
        return self._acquire(name, {"mode": "exclusive", **({"fair": True} if fair else {})}, ttl, wait, renew, description)

    def read(self, name: str, ttl: float = 30, wait: Optional[float] = 10, *, renew: bool = True,
             description: Optional[str] = None) -> Lease:
        """The shared side of a read-write lock."""
        return self._acquire(name, {"mode": "read"}, ttl, wait, renew, description)

    def write(self, name: str, ttl: float = 30, wait: Optional[float] = 10, *, renew: bool = True,
              description: Optional[str] = None) -> Lease:
        """The exclusive side of a read-write lock."""
        return self._acquire(name, {"mode": "write"}, ttl, wait, renew, description)

    def semaphore(self, name: str, permits: int, weight: int = 1, ttl: float = 30, wait: Optional[float] = 10, *,
                  renew: bool = True, description: Optional[str] = None) -> Lease:
        """``weight`` of the ``permits`` of a semaphore (every holder must name the same ``permits``)."""
        for value, what in ((permits, "permits"), (weight, "weight")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f'"{what}" must be an int of at least 1, got {value!r}')
        if weight > permits:
            raise InvalidArgumentError(f'"weight" ({weight}) can not be more than "permits" ({permits})')
        return self._acquire(name, {"mode": "permit", "permits": permits, "weight": weight}, ttl, wait, renew, description)

    def election(self, name: str) -> "Election":
        """A leader election: ``campaign()``, ``leader()``, and ``resign()`` on the term."""
        return Election(self, _check_name(name))

    def inspect(self, name: str) -> Optional[Dict[str, Any]]:
        """Who holds the lock and who waits (the Lock schema), or None when the name is unused."""
        try:
            return self._http.call("GET", "/v1/locks/" + quote_name(_check_name(name)))[1]
        except NotFoundError:
            return None

    def force_release(self, name: str) -> bool:
        """Admin: frees the lock at once; its holders' leases are lost."""
        return bool(self._http.call("DELETE", "/v1/locks/" + quote_name(_check_name(name)))[1]["released"])

    # -- life ------------------------------------------------------------------------

    def close(self) -> None:
        """Releases the leases it renews, ends the session and stops the renewal thread."""
        if self._closed:
            return
        self._closed = True
        self._renewer.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inner workings ----------------------------------------------------------------

    def _acquire(self, name: str, spec: Dict[str, Any], ttl: float, wait: Optional[float], renew: bool,
                 description: Optional[str], path: Optional[str] = None, election: Optional[str] = None) -> Lease:
        if self._closed:
            raise ClosedError("this client is closed (close() was called); make a new Client")
        _check_name(name)
        ttl_s = _seconds(ttl, "ttl", 0.001)
        wait_s = _seconds(wait, "wait", 0.0, allow_none=True)
        assert ttl_s is not None
        body: Dict[str, Any] = {"ttl": _ms(ttl_s), **spec}
        if description is not None:
            body["description"] = description
        # Both are secrets of this one acquire: a re-sent request resumes its place
        # in line (waitId) and is answered the same lease (requestId), never a second one.
        body["requestId"] = secrets.token_urlsafe(18)
        deadline = None if wait_s is None else time.monotonic() + wait_s
        if wait_s is None or wait_s > 0:
            body["waitId"] = secrets.token_urlsafe(18)
        grant, sent_at = self._poll_for_grant(path or "/v1/locks/" + quote_name(name) + "/acquire", body, deadline, ttl_s)
        lease = Lease(self, grant, ttl_s, renew, election)
        now = time.monotonic()
        left = grant.get("ttlMs", _ms(ttl_s)) / 1000
        # The server counted `left` from when it answered, which is no earlier than the
        # request was sent: sent_at + left is a safe end. After a wait that end may be long
        # past, so the lease is counted from now (the grant was answered just now) and
        # renewed at once, to learn its end from a request whose sending time is known.
        waited = now - sent_at > ttl_s / 4
        lease.lost._arm((now if waited else sent_at) + left - safety_margin(ttl_s))
        lease._renew_at = now if waited else sent_at + left / 3
        if renew:
            self._renewer.add(lease)
        return lease

    def _poll_for_grant(self, path: str, body: Dict[str, Any], deadline: Optional[float], ttl: float) -> Tuple[Dict[str, Any], float]:
        waiting = "waitId" in body
        with self._renewer.waiting(ttl) if waiting else _nothing():
            while True:
                now = time.monotonic()
                left = None if deadline is None else max(0.0, deadline - now)
                if waiting:
                    body["wait"] = _ms(ENDLESS_WAIT if left is None else left)
                    session = self._renewer.session_id()
                    if session is not None:
                        body["session"] = session
                    else:
                        body.pop("session", None)
                poll = LONGEST_POLL if left is None else min(left, LONGEST_POLL)
                sent_at = time.monotonic()
                try:
                    status, answer = self._http.call("POST", path, body, timeout=poll + ANSWER_GRACE)
                except LockTimeoutError:
                    if deadline is not None:
                        raise
                    # One of the waits of "as long as it takes" ran out: the next one starts.
                    body["waitId"], body["requestId"] = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
                    continue
                except NotFoundError as error:
                    if "session" not in body or "session" not in error.message:
                        raise
                    self._renewer.forget_session(body["session"])  # the server restarted: open a new one
                    continue
                except (BackendUnavailableError, TooManyWaitersError, QuotaExceededError) as error:
                    # Safe to send again: the same requestId is answered the same lease.
                    pause = error.retry_after if error.retry_after is not None else 0.25
                    if not waiting or (deadline is not None and time.monotonic() + pause >= deadline):
                        raise
                    time.sleep(pause)
                    continue
                if status == 202:
                    body["waitId"] = answer["waitId"]
                    continue
                return answer, sent_at

    def _release(self, lease: Lease) -> bool:
        if lease.released:
            return False
        lease.released = True
        lease.lost._disarm()
        self._renewer.remove(lease)
        if lease.election is not None:
            path = "/v1/elections/" + quote_name(lease.election) + "/resign"
        else:
            path = "/v1/leases/release"
        # In the body, not the path: lease ids are credentials and proxies log paths.
        return bool(self._http.call("POST", path, {"leaseId": lease.lease_id})[1]["released"])


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Election:
    """A leader election of the server (a fair mutex whose holds carry a value)."""

    def __init__(self, client: Client, name: str) -> None:
        self._client = client
        self.name = name

    def campaign(self, value: str = "", ttl: float = 30, wait: Optional[float] = None, *,
                 description: Optional[str] = None) -> Lease:
        """Waits until this candidate leads (``wait`` None: as long as it takes) and returns
        the term: a Lease whose ``token`` orders terms; ``release()`` (or leaving its ``with``) resigns."""
        if not isinstance(value, str):
            raise InvalidArgumentError(f'"value" must be a string, got {value!r}')
        path = "/v1/elections/" + quote_name(self.name) + "/campaign"
        return self._client._acquire(self.name, {"value": value}, ttl, wait, True, description, path=path, election=self.name)

    def leader(self) -> Optional[Dict[str, Any]]:
        """The leader now ({"value", "token", "owner", "expiresAt", ...}, token an int), or None."""
        leader = self._client._http.call("GET", "/v1/elections/" + quote_name(self.name))[1]["leader"]
        if leader is not None:
            leader["token"] = int(leader["token"])
        return leader

    def proclaim(self, term: Lease, value: str) -> None:
        """Changes the leader's announced value, keeping the term; LeaseLostError if it is over."""
        self._client._http.call("POST", "/v1/elections/" + quote_name(self.name) + "/proclaim", {"leaseId": term.lease_id, "value": value})

    def resign(self, term: Lease) -> bool:
        """Gives up the leadership: the next candidate leads at once."""
        return term.release()


class _Renewer:
    """The client's one background thread: keeps a server session, makes new leases
    join it (a batch extend), sends its keepalives (every third of the shortest
    ttl, and of the ttl of any acquire waiting in line), and marks leases lost when
    the server says so or their deadline passes. Leases it gave up are named in
    the next keepalive's giveUp, so the server releases instead of renewing them."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._cond = threading.Condition()
        self._leases: Dict[int, Lease] = {}
        self._give_up: List[Lease] = []
        self._waits: List[float] = []
        self._last_keepalive = 0.0
        self._session: Optional[str] = None
        self._session_lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._retry_at = 0.0

    # -- called by the client's threads --------------------------------------------------

    def add(self, lease: Lease) -> None:
        with self._cond:
            self._leases[id(lease)] = lease
            self._start()
            self._cond.notify()

    def remove(self, lease: Lease) -> None:
        with self._cond:
            self._leases.pop(id(lease), None)

    def waiting(self, ttl: float) -> "_Waiting":
        return _Waiting(self, ttl)

    def session_id(self) -> Optional[str]:
        """The session (opened now if there is none); None if the server could not open one."""
        with self._session_lock:
            if self._session is None:
                try:
                    answer = self._client._http.call("POST", "/v1/sessions", {"ttl": _ms(self._client._session_ttl)})[1]
                    self._session = answer["sessionId"]
                    self._last_keepalive = time.monotonic()
                except BatonError:
                    return None
            return self._session

    def forget_session(self, session: str) -> None:
        """The server does not know the session (a restart): leases join a new one."""
        with self._session_lock:
            if self._session == session:
                self._session = None
        with self._cond:
            now = time.monotonic()
            for lease in self._leases.values():
                if lease._joined:
                    lease._joined = False
                    lease._renew_at = now
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            leases = list(self._leases.values())
            self._cond.notify()
        for lease in leases:
            try:
                lease.release()
            except BatonError:
                pass
        with self._session_lock:
            session, self._session = self._session, None
        if session is not None:
            try:
                self._client._http.call("DELETE", "/v1/sessions/" + session)
            except BatonError:
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self._client._timeout + 1)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="baton-client-renewer", daemon=True)
            self._thread.start()

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                pause = self._next_turn() - time.monotonic()
                if pause > 0:
                    self._cond.wait(pause)
                    continue
            try:
                self._turn()
            except Exception:  # noqa: BLE001 - the thread must outlive any one failure
                self._retry_at = time.monotonic() + 0.25

    def _next_turn(self) -> float:
        times = [self._retry_at] if self._retry_at > time.monotonic() else []
        for lease in self._leases.values():
            times.append(lease._renew_at)
            if lease.lost._deadline is not None:
                times.append(lease.lost._deadline)
        if self._waits:
            times.append(self._last_keepalive + min(self._waits) / 3)
        if self._give_up:
            times.append(time.monotonic())
        if not times:
            return time.monotonic() + 3600
        soonest = min(times)
        return max(soonest, self._retry_at)

    def _turn(self) -> None:
        now = time.monotonic()
        with self._cond:
            for key, lease in list(self._leases.items()):
                if lease.lost.is_set():  # its deadline passed: no longer counted on
                    del self._leases[key]
                    self._give_up.append(lease)
            leases = list(self._leases.values())
            give_up, self._give_up = self._give_up, []
            waits_due = bool(self._waits) and now >= self._last_keepalive + min(self._waits) / 3
        due = [lease for lease in leases if lease._renew_at <= now]
        if not due and not waits_due and not give_up:
            return
        session = self._session if (not due and not waits_due) else self.session_id()
        due_joined = any(lease._joined for lease in due)
        try:
            self._join([lease for lease in due if not lease._joined], session)
            joined = [lease for lease in leases if lease._joined and not lease.lost.is_set()]
            unjoined_given_up = [lease for lease in give_up if not lease._joined or session is None]
            for lease in unjoined_given_up:
                self._client._http.call("POST", "/v1/leases/release", {"leaseId": lease.lease_id})
            given_up = [lease for lease in give_up if lease not in unjoined_given_up]
            if session is not None and (due_joined or waits_due or given_up):
                self._keepalive(session, joined, given_up)
            # Without a session, waiters can not be proven alive: try to open one again soon.
            self._retry_at = time.monotonic() + 0.5 if waits_due and session is None else 0.0
        except BatonError:
            with self._cond:
                self._give_up.extend(lease for lease in give_up if lease not in self._give_up)
            # No answer: try again soon, while the leases' deadlines still stand.
            shortest = min([lease.ttl for lease in leases] or [1.0])
            self._retry_at = time.monotonic() + max(0.02, min(shortest / 10, 1.0))

    def _join(self, leases: List[Lease], session: Optional[str]) -> None:
        """A batch extend per ttl; with a session, the renewed leases join it."""
        by_ttl: Dict[float, List[Lease]] = {}
        for lease in leases:
            by_ttl.setdefault(lease.ttl, []).append(lease)
        for ttl, group in by_ttl.items():
            body: Dict[str, Any] = {"leases": [lease.lease_id for lease in group], "ttl": _ms(ttl)}
            if session is not None:
                body["session"] = session
            sent_at = time.monotonic()
            answer = self._client._http.call("POST", "/v1/leases/extend", body)[1]
            joined = answer.get("session") is True
            for lease, result in zip(group, answer["results"]):
                if lease.released:
                    continue
                if result["status"] == "extended":
                    left = result["ttlMs"] / 1000
                    lease.lost._arm(sent_at + left - safety_margin(ttl))
                    lease._renew_at = sent_at + left / 3
                    lease._joined = joined
                else:
                    why = "its token may not renew it" if result["status"] == "forbidden" else "the server no longer has it (expired, or released by force)"
                    self._lost(lease, why)

    def _keepalive(self, session: str, joined: List[Lease], given_up: List[Lease]) -> None:
        body: Dict[str, Any] = {"sessionId": session}
        if given_up:
            body["giveUp"] = [lease.lease_id for lease in given_up]
        sent_at = time.monotonic()
        try:
            answer = self._client._http.call("POST", "/v1/sessions/keepalive", body)[1]
        except NotFoundError:
            self.forget_session(session)
            return
        self._last_keepalive = sent_at
        lost = set(answer.get("lost", []))
        left = answer["ttlMs"] / 1000
        renewed = 0
        for lease in joined:
            if lease.released:
                continue
            if lease.owner in lost:
                self._lost(lease, "the server says it is gone (expired, or released by force)")
                continue
            renewed += 1
            ttl = min(lease.ttl, left)
            lease.lost._arm(sent_at + ttl - safety_margin(lease.ttl))
            lease._renew_at = sent_at + ttl / 3
        if answer.get("leases", 0) < renewed:
            # The session renews fewer leases than this client counts on it: join them again.
            for lease in joined:
                lease._joined = False

    def _lost(self, lease: Lease, why: str) -> None:
        lease.lost._lose(why)
        self.remove(lease)


class _Waiting:
    """An acquire waiting in line with the session: its keepalives prove this client alive."""

    def __init__(self, renewer: _Renewer, ttl: float) -> None:
        self._renewer = renewer
        self._ttl = ttl

    def __enter__(self) -> None:
        with self._renewer._cond:
            self._renewer._waits.append(self._ttl)
            self._renewer._start()
            self._renewer._cond.notify()

    def __exit__(self, *exc: object) -> None:
        with self._renewer._cond:
            self._renewer._waits.remove(self._ttl)

