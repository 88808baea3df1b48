"""Fencing across HTTP: the headers a lock holder sends with each write to a
service guarded by baton's HttpFence (baton/fencing in the Node library),
which refuses a token below the highest it has accepted (409 STALE_TOKEN).
"""
from __future__ import annotations

import urllib.parse
from typing import Dict

from .errors import InvalidArgumentError

#: Request header naming the lock (the fenced resource).
LOCK_HEADER = "Baton-Lock"
#: Request header carrying the holder's fencing token (decimal).
TOKEN_HEADER = "Baton-Fencing-Token"


def fencing_headers(name: str, token: int) -> Dict[str, str]:
    """{'Baton-Lock': name, 'Baton-Fencing-Token': str(token)}.

    The name is percent-encoded as UTF-8, keeping only RFC 3986 unreserved
    characters (letters, digits, ``-._~``), so any name fits in a header; a
    name made of unreserved characters only is sent as it is.
    """
    if isinstance(token, bool) or not isinstance(token, int) or token < 0:
        raise InvalidArgumentError(f"a fencing token is a non-negative int, got {token!r}")
    return {LOCK_HEADER: urllib.parse.quote(name, safe=""), TOKEN_HEADER: str(token)}
