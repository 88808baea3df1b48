"""The HTTP transport: JSON in, JSON out, error answers as typed errors."""
from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional, Tuple

from .errors import BackendUnavailableError, BatonError, InvalidArgumentError, error_for

USER_AGENT = "baton-client-python/0.1.0"


def quote_name(name: str) -> str:
    """A lock name as one path segment: UTF-8, percent-encoded, only RFC 3986 unreserved characters kept."""
    return urllib.parse.quote(name, safe="")


class Transport:
    def __init__(self, url: str, token: Optional[str], timeout: float, ssl_context: Optional[ssl.SSLContext]) -> None:
        if not isinstance(url, str):
            raise InvalidArgumentError(f"the server URL must be a string, got {type(url).__name__}")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidArgumentError(f'the server URL must be http://host:port or https://host:port, got "{url}"')
        if parts.query or parts.fragment:
            raise InvalidArgumentError(f'the server URL takes no query or fragment, got "{url}"')
        if token is not None and (not isinstance(token, str) or not token or any(c in token for c in "\r\n")):
            raise InvalidArgumentError("token must be a non-empty string without line breaks, or None")
        self.base = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.ssl_context = ssl_context

    def call(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None) -> Tuple[int, Any]:
        """(status, parsed JSON) of a 2xx answer; an error answer or no answer raises a BatonError."""
        headers: Dict[str, str] = {"accept": "application/json", "user-agent": USER_AGENT}
        data = None
        if body is not None:
            headers["content-type"] = "application/json"
            data = json.dumps(body).encode("utf-8")
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout, context=self.ssl_context) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as answer:
            raise _error_of(answer) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as failure:
            reason = getattr(failure, "reason", failure)
            raise BackendUnavailableError(f"the baton server at {self.base} did not answer ({reason})") from failure
        except ValueError as failure:  # not JSON: not a baton server
            raise BackendUnavailableError(f"the server at {self.base} answered something that is not JSON") from failure


def _error_of(answer: urllib.error.HTTPError) -> BatonError:
    retry_after: Optional[float] = None
    header = answer.headers.get("retry-after") if answer.headers else None
    if header is not None:
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    try:
        raw = answer.read()
        error = json.loads(raw).get("error") or {}
        code, message = error.get("code"), error.get("message") or ""
    except (ValueError, AttributeError, OSError):
        code, message = None, ""
    if not code:
        # Not the server's Error schema: a proxy's or load balancer's answer.
        code = "BACKEND_UNAVAILABLE" if answer.code >= 500 else None
        message = f"HTTP {answer.code} {answer.reason} (not an answer of the baton server)"
    return error_for(code, message, answer.code, retry_after)
