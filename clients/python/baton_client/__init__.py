"""baton_client: a Python client for the baton lock server (standard library only).

    import baton_client

    client = baton_client.Client("http://127.0.0.1:7420", token=None)
    with client.lock("orders/42", ttl=30, wait=10) as lease:
        lease.check()                      # raises LeaseLostError once the lease is lost
        charge(order, fencing_token=lease.token)

Durations are seconds. See clients/python/README.md.
"""
from .client import Client, Election
from .errors import (
    AbortedError, BackendUnavailableError, BatonError, ClosedError, ForbiddenError, InvalidArgumentError,
    LeaseLostError, LockTimeoutError, NotFoundError, NotHolderError, QuorumNotReachedError, QuotaExceededError, ReplicaAckTimeoutError,
    StaleTokenError, TooManyWaitersError, UnauthorizedError, ERRORS,
)
from .fencing import LOCK_HEADER, TOKEN_HEADER, fencing_headers
from .lease import Lease, LostEvent

__version__ = "0.1.0"

__all__ = [
    "Client", "Election", "Lease", "LostEvent", "fencing_headers", "LOCK_HEADER", "TOKEN_HEADER", "ERRORS",
    "BatonError", "AbortedError", "BackendUnavailableError", "ClosedError", "ForbiddenError", "InvalidArgumentError",
    "LeaseLostError", "LockTimeoutError", "NotFoundError", "NotHolderError", "QuorumNotReachedError",
    "QuotaExceededError", "ReplicaAckTimeoutError", "StaleTokenError", "TooManyWaitersError", "UnauthorizedError",
]
