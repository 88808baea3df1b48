"""Typed errors: one class per error code of the server (the `code` enum of
the Error schema in /openapi.json), all subclasses of BatonError.

Match on the class (``except baton_client.LockTimeoutError``) or on
``error.code``; the message is for people.
"""
from __future__ import annotations

from typing import Dict, Optional, Type


class BatonError(Exception):
    """An error of the lock server or of this client.

    ``code`` is the server's code (``LOCK_TIMEOUT``, ``LEASE_LOST``, ...),
    ``status`` the HTTP status (None when no answer came), ``retry_after``
    the seconds of a ``Retry-After`` header, when the server sent one.
    """

    code: str = "BATON_ERROR"
    #: Whether trying the same call again later can succeed.
    retryable: bool = False

    def __init__(self, message: str, status: Optional[int] = None, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f" ({self.status})" if self.status is not None else ""
        return f"{self.code}{where}: {self.message}"


class LockTimeoutError(BatonError, TimeoutError):
    """The lock was not granted within ``wait`` (409)."""
    code = "LOCK_TIMEOUT"
    retryable = True


class AbortedError(BatonError):
    """The wait was ended: cancelled, its session ended, or the server shut down."""
    code = "ABORTED"


class LeaseLostError(BatonError):
    """The lease is gone: expired, released, or taken by force (410)."""
    code = "LEASE_LOST"


class NotHolderError(BatonError):
    code = "NOT_HOLDER"


class InvalidArgumentError(BatonError, ValueError):
    """A bad name, duration, option or body (400); nothing reached the store."""
    code = "INVALID_ARGUMENT"


class BackendUnavailableError(BatonError, ConnectionError):
    """The server (or its store) did not answer, or is shutting down (503)."""
    code = "BACKEND_UNAVAILABLE"
    retryable = True


class QuorumNotReachedError(BatonError):
    code = "QUORUM_NOT_REACHED"
    retryable = True


class UnauthorizedError(BatonError):
    """No token, or not a token of this server (401)."""
    code = "UNAUTHORIZED"


class ForbiddenError(BatonError):
    """The token lacks the right for this name (403)."""
    code = "FORBIDDEN"


class ClosedError(BatonError):
    """The client (or the server) was closed."""
    code = "CLOSED"


class StaleTokenError(BatonError):
    """A fenced resource refused a write: a newer holder has written since."""
    code = "STALE_TOKEN"


class NotFoundError(BatonError):
    """No such lock, lease, wait or session (404)."""
    code = "NOT_FOUND"


class TooManyWaitersError(BatonError):
    """Too many waiting requests on the server (429); retry after ``retry_after``."""
    code = "TOO_MANY_WAITERS"
    retryable = True


class QuotaExceededError(BatonError):
    """The token's quota on this server is used up (429)."""
    code = "QUOTA_EXCEEDED"
    retryable = True


class ReplicaAckTimeoutError(BatonError):
    """The server's Redis store did not have the grant acknowledged by its replicas in time (503); it was given back."""
    code = "REPLICA_ACK_TIMEOUT"
    retryable = True


ERRORS: Dict[str, Type[BatonError]] = {
    cls.code: cls
    for cls in (
        LockTimeoutError, AbortedError, LeaseLostError, NotHolderError, InvalidArgumentError,
        BackendUnavailableError, QuorumNotReachedError, UnauthorizedError, ForbiddenError, ClosedError,
        StaleTokenError, NotFoundError, TooManyWaitersError, QuotaExceededError, ReplicaAckTimeoutError,
    )
}


def error_for(code: Optional[str], message: str, status: Optional[int] = None, retry_after: Optional[float] = None) -> BatonError:
    """The typed error of a server's answer; an unknown code keeps its code on a plain BatonError."""
    cls = ERRORS.get(code or "")
    if cls is not None:
        return cls(message, status, retry_after)
    error = BatonError(message, status, retry_after)
    if code:
        error.code = code
    return error
