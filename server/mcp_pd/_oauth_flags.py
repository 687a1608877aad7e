"""The `--oauth-*` flags `mcp-pd serve` and `mcp-pd proxy` share, and the `ClientAuth` they ask for.

Importable without the SDK (the parsers are built for `--help`); the token checks live in `_oauth.py`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Final

__all__ = [
    "OAUTH_SECRET_ENV",
    "add_oauth_flags",
    "announce_policy_changes",
    "oauth_client_auth",
    "oauth_given",
    "policy_file",
]

OAUTH_SECRET_ENV: Final = "MCP_PD_OAUTH_CLIENT_SECRET"
_FLAGS: Final = (
    "oauth_issuer",
    "oauth_resource",
    "oauth_scope",
    "oauth_algorithm",
    "oauth_leeway",
    "oauth_client_id",
    "oauth_client_secret_file",
    "grants_per",
)


def add_oauth_flags(p: argparse.ArgumentParser) -> None:
    """The OAuth 2.1 resource-server flags (HTTP only)."""
    g = p.add_argument_group(
        "OAuth 2.1 and whose grants (--transport http)",
        "Accept access tokens from an identity provider instead of a static token file (docs/team.md): the "
        "issuer's metadata is discovered, JWTs are checked against its keys (signature, iss, aud, exp/nbf, scopes), "
        "and GET /.well-known/oauth-protected-resource/... tells clients where to get a token (RFC 9728).",
    )
    g.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help="the authorization server's issuer URL, exactly as its metadata names it (e.g. https://idp.example.com"
        "/realms/team); its RFC 8414 or OpenID Connect discovery document is read at start-up",
    )
    g.add_argument(
        "--oauth-resource",
        metavar="URL",
        help="this server's URL as clients reach it, which tokens must carry as their audience (RFC 8707), e.g. "
        "https://mcp.example.com/mcp (default on loopback: http://HOST:PORT/mcp; required otherwise)",
    )
    g.add_argument(
        "--oauth-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope every request's token must hold (repeatable); a token without it gets 403 insufficient_scope",
    )
    g.add_argument(
        "--oauth-algorithm",
        action="append",
        default=[],
        metavar="ALG",
        help="a JWS algorithm to accept (repeatable; default RS256, PS256, ES256, EdDSA; only asymmetric ones)",
    )
    g.add_argument(
        "--oauth-leeway",
        type=float,
        metavar="SECONDS",
        help="clock skew allowed on exp and nbf (default 30)",
    )
    g.add_argument(
        "--oauth-client-id",
        metavar="ID",
        help="this server's client at the issuer, for RFC 7662 introspection of opaque tokens; its secret comes "
        f"from --oauth-client-secret-file or ${OAUTH_SECRET_ENV}",
    )
    g.add_argument(
        "--oauth-client-secret-file",
        type=Path,
        metavar="FILE",
        help="a file holding the introspection client's secret (one line)",
    )
    g.add_argument(
        "--policy",
        type=Path,
        metavar="FILE",
        help="who may use which tool (TOML: subjects, groups and scopes mapped to upstreams and tool-name patterns, "
        "deny winning; docs/team.md); reloaded when it changes. A tool a principal may not use does not exist for "
        "it: not listed, described, searched, suggested or callable. Without a token only 'everyone' rules apply",
    )
    g.add_argument(
        "--grants-per",
        choices=("principal", "session"),
        help="with --oauth-issuer or --bearer-tokens: keep grants per principal (the token's client, issuer and "
        "subject: one person's connections and replicas share them; the default) or per MCP session (each "
        "connection fetches for itself, as without tokens; handshake-era clients only)",
    )


def oauth_given(args: argparse.Namespace) -> list[str]:
    """The `--oauth-*` flags given, as their dests."""
    return [dest for dest in _FLAGS if getattr(args, dest, None) not in (None, [])]


def _secret(args: argparse.Namespace) -> str | None:
    from_env = os.environ.get(OAUTH_SECRET_ENV)
    if args.oauth_client_secret_file is not None and from_env:
        raise ValueError(f"--oauth-client-secret-file and ${OAUTH_SECRET_ENV} both give a secret: keep one")
    if args.oauth_client_secret_file is not None:
        try:
            return str(args.oauth_client_secret_file.read_text(encoding="utf-8").strip()) or None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read --oauth-client-secret-file {args.oauth_client_secret_file}: {exc}") from None
    return from_env.strip() if from_env else None


def oauth_client_auth(args: argparse.Namespace) -> Any:
    """The `ClientAuth` the `--oauth-*` flags ask for (the issuer's metadata read now), or None without
    `--oauth-issuer`; ValueError saying what is wrong."""
    given = oauth_given(args)
    if args.grants_per is not None and args.oauth_issuer is None and getattr(args, "bearer_tokens", None) is None:
        raise ValueError("--grants-per needs --oauth-issuer or --bearer-tokens (without tokens grants are per session)")
    given = [dest for dest in given if dest != "grants_per"]
    if args.oauth_issuer is None:
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} needs --oauth-issuer")
        return None
    if getattr(args, "bearer_tokens", None) is not None:
        raise ValueError("--bearer-tokens and --oauth-issuer both say who may connect: give one")
    import anyio

    from ._auth import ClientAuth
    from ._http import is_loopback
    from ._oauth import DEFAULT_ALGORITHMS, OAuthSettings, OAuthVerifier, discover_issuer, scopes_named

    resource = args.oauth_resource
    if resource is None:
        if not is_loopback(args.host):
            raise ValueError(
                f"--host {args.host} serves beyond this machine: give --oauth-resource with the URL clients use "
                "(e.g. https://mcp.example.com/mcp), which their tokens must name as audience"
            )
        host = f"[{args.host.strip('[]')}]" if ":" in args.host else args.host
        resource = f"http://{host}:{args.port}/mcp"
    secret = _secret(args)
    if (args.oauth_client_id is None) != (secret is None):
        raise ValueError(
            "--oauth-client-id and its secret (--oauth-client-secret-file or "
            f"${OAUTH_SECRET_ENV}) go together: give both, or neither"
        )
    settings = OAuthSettings(
        issuer=args.oauth_issuer,
        resource=resource,
        scopes=scopes_named(args.oauth_scope),
        algorithms=tuple(args.oauth_algorithm) or DEFAULT_ALGORITHMS,
        leeway=30.0 if args.oauth_leeway is None else args.oauth_leeway,
        introspection_client=None if secret is None else (args.oauth_client_id, secret),
    )
    metadata = anyio.run(discover_issuer, settings.issuer)
    verifier = OAuthVerifier(settings, metadata)
    return ClientAuth.oauth(
        verifier,
        resource=settings.resource,
        issuer=settings.issuer,
        required_scopes=settings.scopes,
        description=verifier.describe(),
    )


def policy_file(args: argparse.Namespace, command: str) -> Any:
    """The `PolicyFile` `--policy` names (None without it); SystemExit with the reason when it cannot be used."""
    if getattr(args, "policy", None) is None:
        return None
    from ._access import PolicyFile

    try:
        return PolicyFile(args.policy)
    except ValueError as exc:
        raise SystemExit(f"mcp-pd {command}: {exc}") from None


def announce_policy_changes(policy: Any, pd: Any) -> None:
    """After the policy file changed, every client is told to list again (what each may see changed)."""
    if policy is not None:
        policy.listeners.append(lambda: pd.announcer.announce(frozenset(pd.catalog.names())))
