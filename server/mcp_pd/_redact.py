"""Secrets never leave the operator's log: the one rule, for every text a client, the operator page, a result's
`_meta`, the vector cache or a log line may show.

Text that goes out is built from the operator's configuration (URLs, header values, environment) and from what
libraries raise (an HTTP library quoting an illegal header value, a URL with its `user:password@`). `redact(text)`
takes secrets out of it in two ways:

- **known values**: what the configuration says is (or may be) a credential is registered where it is read
  (`register_headers`, `register_env`, `register_url`, `register`) and replaced wherever it appears, as written or
  as a library quotes it (escaped, URL-encoded). Values shorter than `MIN_SECRET` characters are not registered:
  replacing "1" or "yes" everywhere would garble every message and protect nothing;
- **by shape**: a URL's credentials (`scheme://user:pass@`), an authorization scheme's credentials (`Bearer ...`,
  `Basic ...`), a query value under a name such as `key`, `token` or `secret`, and a header value an HTTP library
  quotes in its refusal (`Illegal header value b'...'`), whether registered or not.

`public_url(url)` is a URL as it may be shown and used as an identifier: no user or password, credential-like
query values masked. `RedactingFilter` applies `redact` to every record a logging handler writes
(`redact_logs()` installs it on the root logger's handlers), so the operator's log keeps no secret either.

Imports nothing of the package: both the library (the embeddings endpoint) and the gateway use it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

__all__ = [
    "MIN_SECRET",
    "REDACTED",
    "RedactingFilter",
    "public_url",
    "redact",
    "redact_logs",
    "register",
    "register_env",
    "register_headers",
    "register_url",
]

REDACTED: Final = "[redacted]"
MIN_SECRET: Final = 6

# Headers whose values describe the request, never a credential.
_PLAIN_HEADERS: Final = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "content-type",
        "mcp-protocol-version",
        "user-agent",
    }
)
# Words of an authorization header value that are its scheme, not its credentials.
_SCHEMES: Final = frozenset({"bearer", "basic", "token", "digest", "apikey", "negotiate"})
# An environment variable or query parameter whose name says its value is a credential.
_SECRET_NAME: Final = re.compile(
    r"(?i)(key|token|secret|passw|pwd|auth|credential|cookie|session|signature|sig$|private|dsn|(^|_)pat($|_))"
)

_SHAPES: Final = (
    # scheme://user:password@host (or just user@): the whole user part.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]+@"), rf"\1{REDACTED}@"),
    # An HTTP library refusing a header value quotes it: `Illegal header value b'Bearer abc '`.
    (re.compile(r"(?i)(header value\s*:?\s*)(b?)('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"), rf"\1{REDACTED}"),
    # An authorization scheme followed by its credentials (12 characters or more: "Bearer tokens" is prose).
    (re.compile(r"(?i)\b(bearer|basic|digest)(\s+)[A-Za-z0-9._~+/=:-]{12,}"), rf"\1\2{REDACTED}"),
    # ?api_key=... &token=... &sig=...: credential-like query values.
    (
        re.compile(r"(?i)([?&;][^=&;#\s]*(?:key|token|secret|passw|auth|sig|credential)[^=&;#\s]*=)[^&;#\s'\"]+"),
        rf"\1{REDACTED}",
    ),
)


class _Known:
    """The registered secret values and one pattern matching any of them (longest first)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self.pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        fresh = {form for value in values for form in _forms(value)} - self._values
        if not fresh:
            return
        with self._lock:
            self._values |= fresh
            ordered = sorted(self._values, key=len, reverse=True)
            self.pattern = re.compile("|".join(re.escape(v) for v in ordered))


_KNOWN: Final = _Known()


def _forms(value: str) -> set[str]:
    """`value` as it may appear in a message: as written, escaped by repr (str or bytes), URL-encoded."""
    value = value.strip()
    if len(value) < MIN_SECRET:
        return set()
    forms = {value, repr(value)[1:-1], repr(value.encode("utf-8", "replace"))[2:-1], quote(value), quote_plus(value)}
    return {f for f in forms if len(f) >= MIN_SECRET}


def register(*values: str | None) -> None:
    """Treat each value (of `MIN_SECRET` characters or more) as a secret from now on."""
    _KNOWN.add(v for v in values if v)


def register_headers(headers: Mapping[str, str]) -> None:
    """HTTP header values but the descriptive ones (`Accept`, `Content-Type`, ...): each whole value, and each
    word of it but an authorization scheme's name (`Bearer <token>`: the token is a secret on its own too)."""
    for name, value in headers.items():
        if name.strip().lower() in _PLAIN_HEADERS:
            continue
        register(value, *(word for word in value.split() if word.lower() not in _SCHEMES))


def register_env(env: Mapping[str, str]) -> None:
    """Environment values whose name says they are credentials (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
    ...), and the credentials of any value that is a URL."""
    for name, value in env.items():
        if _SECRET_NAME.search(name):
            register(value)
        elif "://" in value:
            register_url(value)


def register_url(url: str | None) -> None:
    """A URL's user and password, and its credential-like query values."""
    if not url:
        return
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return
    register(parts.password, parts.username if parts.password else None)
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if _SECRET_NAME.search(name):
            register(value)


def redact(text: str) -> str:
    """`text` without any registered secret or anything shaped like a credential (see the module docstring)."""
    pattern = _KNOWN.pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for shape, replacement in _SHAPES:
        text = shape.sub(replacement, text)
    return text


def public_url(url: str) -> str:
    """`url` as it may be shown, logged or used in an identifier: no user or password, credential-like query
    values masked (its scheme, host, port and path kept)."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return redact(urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")))


class RedactingFilter(logging.Filter):
    """A handler filter that writes each record (its message and any traceback) through `redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_logs(logger: logging.Logger | None = None) -> None:
    """Install `RedactingFilter` on every handler of `logger` (default: the root logger), once."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
