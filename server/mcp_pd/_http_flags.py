"""The flags `mcp-pd serve` and `mcp-pd proxy` share over HTTP (limits, Host/Origin, client and operator tokens) and
what they decide (`HttpSettings`), checked before anything is started; argparse types for counts and seconds. Knows
nothing about what is served."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["HttpSettings", "count", "http_flags", "http_settings", "positive", "seconds"]


def count(text: str) -> int:
    """A whole number, 0 or more (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, 0 or more (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, not {text}")
    return value


def positive(parse: Callable[[str], float]) -> Callable[[str], float]:
    """`parse`, refusing 0."""

    def parsed(text: str) -> float:
        value = parse(text)
        if value == 0:
            raise argparse.ArgumentTypeError("must be more than 0")
        return value

    return parsed


def http_flags(p: argparse.ArgumentParser, *, operator: str) -> None:
    """The HTTP flags `serve` and `proxy` share: limits, Host/Origin, the operator token (`operator`: its endpoints)."""
    from ._limits import ADMIN_TOKEN_ENV, HttpLimits

    d = HttpLimits()
    g = p.add_argument_group(
        "HTTP limits (--transport http)",
        "What one server lets its clients hold, and who gets in. DNS-rebinding protection (Host and Origin checks) "
        "is always on, for every path: on loopback 127.0.0.1, localhost and [::1] are allowed; any other --host "
        "needs --allowed-host.",
    )
    # Defaults are None so that giving a flag where it has no effect (stdio, --stateless) is an error, not a no-op.
    g.add_argument(
        "--max-sessions",
        type=count,
        metavar="N",
        help=f"open sessions at once; one more gets 503 until one ends (default {d.max_sessions}; 0: no cap)",
    )
    g.add_argument(
        "--session-idle-timeout",
        type=seconds,
        metavar="SECONDS",
        help="end a session (and its grants) after this long with no request in flight; an open SSE stream counts "
        f"as one (default {d.session_idle_timeout:g}; 0: never)",
    )
    g.add_argument(
        "--max-body-size",
        type=positive(count),
        metavar="BYTES",
        help=f"largest request body; larger ones get 413 (default {d.max_body_bytes})",
    )
    g.add_argument(
        "--request-timeout",
        type=positive(seconds),
        metavar="SECONDS",
        help="time a client has to send a request's headers (from connecting, or from the request's first byte), "
        "and again its body, before it gets 408 and is disconnected; responses, SSE streams included, are not "
        "limited "
        f"(default {d.request_timeout:g})",
    )
    g.add_argument(
        "--write-timeout",
        type=positive(seconds),
        metavar="SECONDS",
        help="time a client may leave its response unread (it reads nothing while the server has bytes for it) "
        "before it is disconnected and what the server held for it is let go; a client that reads, however "
        f"slowly, is not cut off (default {d.write_timeout:g})",
    )
    g.add_argument(
        "--keep-alive-timeout",
        type=positive(seconds),
        metavar="SECONDS",
        help=f"close a connection idle this long between requests (default {d.keep_alive_timeout:g})",
    )
    g.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a Host header value to accept (repeatable; a bare HOST accepts any port); required when --host is "
        "not a loopback address; others get 421",
    )
    g.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="SCHEME://HOST[:PORT]",
        help="a browser Origin to accept (repeatable); requests without Origin pass, others get 403",
    )
    g.add_argument(
        "--admin-token-file",
        type=Path,
        metavar="FILE",
        help=f"the operator credential (or set ${ADMIN_TOKEN_ENV}): a file holding one token of 16+ characters, "
        f"different from every client token. The operator endpoints ({operator}) then answer only requests "
        "carrying it ('Authorization: Bearer TOKEN', or TOKEN as the HTTP Basic password, which browsers ask for), "
        "from any address; client tokens never open them. Without it they answer loopback clients only (not "
        "through a reverse proxy), and nobody once --bearer-tokens is set",
    )
    from ._oauth_flags import add_oauth_flags

    add_oauth_flags(p)


_SESSION_FLAGS = ("max_sessions", "session_idle_timeout")
_HTTP_FLAGS = (
    *_SESSION_FLAGS,
    "max_body_size",
    "request_timeout",
    "write_timeout",
    "keep_alive_timeout",
    "allowed_host",
    "allowed_origin",
    "admin_token_file",
    "bearer_tokens",
)


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


@dataclass(frozen=True)
class HttpSettings:
    """What the HTTP flags decided: limits, Host/Origin rules, client tokens (None: none), the operator token."""

    limits: Any
    security: Any
    clients: Any = None
    operator_token: str | None = None


def http_settings(args: argparse.Namespace, command: str) -> HttpSettings:
    """The HTTP settings the flags of `mcp-pd COMMAND` ask for (read before anything is started); SystemExit with
    the reason if they cannot hold."""
    from ._auth import ClientAuth, StaticTokenVerifier
    from ._http import HttpLimits, admin_token, transport_security
    from ._oauth_flags import oauth_client_auth, oauth_given

    given = [dest for dest in _HTTP_FLAGS if getattr(args, dest) not in (None, [])] + oauth_given(args)
    if args.transport != "http" and given:
        raise SystemExit(f"mcp-pd {command}: {_flag(given[0])} applies to --transport http only")
    stateless = getattr(args, "stateless", False)
    if stateless and (session_flags := [d for d in given if d in _SESSION_FLAGS]):
        raise SystemExit(f"mcp-pd {command}: {_flag(session_flags[0])} has no effect with --stateless (no sessions)")
    d = HttpLimits()
    limits = HttpLimits(
        max_sessions=(args.max_sessions or None) if args.max_sessions is not None else d.max_sessions,
        session_idle_timeout=(
            (args.session_idle_timeout or None) if args.session_idle_timeout is not None else d.session_idle_timeout
        ),
        max_body_bytes=args.max_body_size or d.max_body_bytes,
        request_timeout=args.request_timeout or d.request_timeout,
        write_timeout=args.write_timeout or d.write_timeout,
        keep_alive_timeout=args.keep_alive_timeout or d.keep_alive_timeout,
    )
    if args.transport != "http":
        return HttpSettings(limits, None)
    try:
        security = transport_security(args.host, args.allowed_host, args.allowed_origin)
        oauth = oauth_client_auth(args)
        static = StaticTokenVerifier.from_file(args.bearer_tokens) if args.bearer_tokens is not None else None
        clients = ClientAuth.static(static) if static is not None else oauth
        token = admin_token(args.admin_token_file, os.environ)
        import anyio

        if token is not None and static is not None and anyio.run(static.verify_token, token) is not None:
            raise ValueError("the operator token is also a client token in --bearer-tokens: give it one of its own")
    except ValueError as exc:
        raise SystemExit(f"mcp-pd {command}: {exc}") from None
    return HttpSettings(limits, security, clients, token)
