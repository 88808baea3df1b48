"""A lease: what a granted lock gives its holder."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Optional

from .errors import BatonError, LeaseLostError
from .fencing import fencing_headers

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client


def safety_margin(ttl: float) -> float:
    """How long before the server's end a lease counts as lost here: 10 ms + 1% of
    the ttl (timer lateness, clock rate drift), never more than a quarter of it."""
    return min(ttl / 4, 0.010 + ttl * 0.01)


class LostEvent(threading.Event):
    """``lease.lost``: a threading.Event that is set the moment the server says the
    lease is lost, or its local deadline (by the monotonic clock) passes.

    The deadline is checked whenever the event is read (``is_set()``, ``wait()``),
    not only by the renewal thread, so a process that was paused (SIGSTOP, a long
    GC, a suspended VM) past its lease's end sees ``is_set()`` True on its very
    first look after it resumes, before the background thread has had a chance
    to run.
    """

    def __init__(self) -> None:
        super().__init__()
        self._deadline: Optional[float] = None
        self._released = False
        self.reason: Optional[str] = None

    def _arm(self, deadline: float) -> None:
        # A renewal answered after the release must not arm a released lease again.
        if not self._released:
            self._deadline = deadline

    def _disarm(self) -> None:
        self._released = True
        self._deadline = None

    def _lose(self, reason: str) -> None:
        if not super().is_set():
            self.reason = reason
            self._deadline = None
            super().set()

    def is_set(self) -> bool:
        if super().is_set():
            return True
        deadline = self._deadline
        if deadline is not None and time.monotonic() >= deadline:
            self._lose("no renewal was confirmed before the lease's end (by this process's monotonic clock)")
            return True
        return False

    isSet = is_set  # the old threading.Event alias

    def wait(self, timeout: Optional[float] = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_set():
                return True
            now = time.monotonic()
            steps = [t - now for t in (self._deadline, end) if t is not None]
            if end is not None and end <= now:
                return False
            # Wakes at the deadline known now; a renewal that moves it is seen on the next turn.
            super().wait(max(0.0, min(steps)) if steps else None)


class Lease:
    """A granted lock. Use it as a context manager, or call ``release()``.

    ``token`` (int) is the fencing token: hand it to what the lock protects.
    ``lost`` is a LostEvent (a threading.Event). ``held`` is True while the
    lease is neither released nor lost. ``lease_id`` is an opaque secret of
    the server: treat it like a password and never parse it.
    """

    def __init__(self, client: "Client", grant: Dict[str, Any], ttl: float, renew: bool, election: Optional[str] = None) -> None:
        self._client = client
        self.name: str = grant["name"]
        self.token: int = int(grant["token"])
        self.mode: str = grant.get("mode", "exclusive")
        self.lease_id: str = grant["leaseId"]
        #: Digest of the secret owner, as the server's inspect and events show it.
        self.owner: str = grant.get("owner", "")
        self.ttl = ttl
        self.renew = renew
        self.election = election
        self.lost = LostEvent()
        self.released = False
        # Renewal state, kept by the client's renewal thread.
        self._renew_at = 0.0
        self._joined = False

    @property
    def held(self) -> bool:
        """Neither released nor lost (the deadline is checked now)."""
        return not self.released and not self.lost.is_set()

    def is_lost(self) -> bool:
        return self.lost.is_set()

    @property
    def lost_reason(self) -> Optional[str]:
        return self.lost.reason if self.lost.is_set() else None

    def remaining(self) -> float:
        """Seconds this process may still count on the lease (0 when lost or released)."""
        deadline = self.lost._deadline
        if self.released or deadline is None or self.lost.is_set():
            return 0.0
        return max(0.0, deadline - time.monotonic())

    def check(self) -> None:
        """Raises LeaseLostError unless the lease is held: call it right before acting."""
        if self.lost.is_set():
            raise LeaseLostError(f'the lease on "{self.name}" was lost: {self.lost.reason}')
        if self.released:
            raise LeaseLostError(f'the lease on "{self.name}" was released')

    def fencing_headers(self) -> Dict[str, str]:
        """Headers for a fenced HTTP service (Baton-Lock, Baton-Fencing-Token)."""
        return fencing_headers(self.name, self.token)

    def release(self) -> bool:
        """Releases the lease; False if the server no longer had it. Idempotent."""
        return self._client._release(self)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.release()
        except BatonError:
            # A release that fails (the server is down) ends with the ttl anyway;
            # it must not hide the exception that left the block.
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        state = "held" if self.held else ("released" if self.released else "lost")
        return f"<Lease {self.name!r} {self.mode} token={self.token} {state}>"
