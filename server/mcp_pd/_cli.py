"""`mcp-pd`: serve the reference server, check an implementation, run the agent demo."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["main"]


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the reference server (or --simulate any definitions directory)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--descriptions", type=Path, help="directory of <tool>.json definitions")
    p.add_argument(
        "--simulate",
        action="store_true",
        help="serve every definition in --descriptions with simulated tools that validate and echo",
    )
    p.add_argument("--database", default=":memory:", help="SQLite file for the tracker (default: in memory)")
    p.add_argument("--stateless", action="store_true", help="stateless Streamable HTTP (no sessions)")
    p.add_argument(
        "--sessionless",
        choices=("downgrade", "reject"),
        default="downgrade",
        help="policy for requests without a session (see spec/sessions.md)",
    )
    p.add_argument("--fetch-rate", type=float, default=10.0, help="resource reads per second per session (0: off)")
    p.add_argument("--fetch-burst", type=int, default=60, help="resource reads allowed at once per session")
    p.add_argument("--no-watch", action="store_true", help="do not reload definition files when they change")
    p.add_argument(
        "--list-annotations",
        action="store_true",
        help="keep title and annotations in tools/list entries (default: only in the fetched definition)",
    )
    p.add_argument(
        "--mode",
        choices=("eager", "progressive", "catalog"),
        default="progressive",
        help="progressive: spec v2.1 with the describe_tools tool (default); eager: full definitions listed, nothing "
        "enforced (the baseline and the escape hatch); catalog: a fixed tools/list of search_tools, browse_tools, "
        "describe_tools and call_tool, for thousands of tools (categories: one subfolder of --descriptions each)",
    )
    p.add_argument(
        "--pin", action="append", default=[], metavar="TOOL", help="catalog mode: also list this tool (repeatable)"
    )
    p.add_argument(
        "--lexical",
        action="store_true",
        help="catalog mode: search without the embedding model even when the semantic extra is installed",
    )
    _cache_flags(p)
    p.add_argument(
        "--no-describe-tool",
        action="store_true",
        help="do not serve the describe_tools tool (models must read resource:///tool_descriptions themselves)",
    )
    p.add_argument("--page-size", type=_positive(_count), default=1000, help="tools per tools/list page (default 1000)")
    p.add_argument(
        "--redis",
        metavar="URL",
        help="keep grants and the fetch rate limit in Redis (redis://host:port/db): shared by replicas, kept across "
        "restarts; needs the redis extra",
    )
    p.add_argument(
        "--redis-prefix", default="mcp-pd:", help="key prefix in Redis, one per deployment (default mcp-pd:)"
    )
    p.add_argument(
        "--bearer-tokens",
        type=Path,
        metavar="FILE",
        help="HTTP: require a bearer token from this JSON file ({token: {client_id, subject}}); grants are then kept "
        "per principal (spec/sessions.md). Client tokens never open GET /metrics: see --admin-token-file",
    )
    p.add_argument(
        "--no-metrics",
        action="store_true",
        help="HTTP: do not serve GET /metrics (Prometheus text format; on when the metrics extra is installed)",
    )
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    http_flags(p, operator="GET /metrics")


def _cache_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache",
        "--vector-cache",
        dest="cache",
        type=Path,
        metavar="DIR",
        help="catalog mode: keep the search vectors in DIR, shared by every process that serves these tools, so a "
        "new process ranks with vectors from its first search (default: the user's cache directory, "
        "$MCP_PD_CACHE_DIR or ~/.cache/mcp-pd)",
    )
    p.add_argument(
        "--no-cache",
        "--no-vector-cache",
        dest="no_cache",
        action="store_true",
        help="catalog mode: keep search vectors in memory only (embed per process)",
    )
    from ._search.remote import add_flags

    add_flags(p)  # --embeddings-url/-model/-key-env/-timeout: a deployment's model server


def _vector_cache(args: argparse.Namespace, command: str) -> Path | str | None:
    if args.no_cache and args.cache is not None:
        raise SystemExit(f"mcp-pd {command}: --cache and --no-cache contradict each other")
    return None if args.no_cache else (args.cache or "default")


def _try_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "search",
        help="what a catalog-mode server over DIR answers search_tools, with each hit's figures",
        description="Serve DIR's definitions in catalog mode in this process and print, as JSON, what search_tools "
        "answers QUERY (the rows, their match band, the note when no row is strong), each hit's figures (fused "
        "score, cosine, how much of the query it answers) and which ranking answered.",
    )
    p.add_argument("descriptions", type=Path, metavar="DIR", help="directory of <tool>.json definitions")
    p.add_argument("query", help="what a model would ask for, in any language")
    p.add_argument("--limit", type=_positive(_count), default=5, help="rows (default 5)")
    _cache_flags(p)
    p = sub.add_parser(
        "call",
        help="describe, then call, one tool of a server, in one session",
        description="Open one session with a server, read TOOL's definition (the descriptions resource, else the "
        "describe_tools tool), call TOOL with ARGUMENTS, and print both as JSON. One session is what a gated call "
        "needs: a client that opens a new session per command (the Inspector CLI) is refused every time.",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="COMMAND", help="the server's command line, e.g. 'python server.py'")
    target.add_argument("--url", metavar="URL", help="a Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    p.add_argument("tool", metavar="TOOL")
    p.add_argument("arguments", metavar="ARGUMENTS", nargs="?", default="{}", help="a JSON object (default {})")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME: VALUE",
        help="an HTTP header to send, e.g. 'Authorization: Bearer TOKEN' (repeatable)",
    )


def _try(args: argparse.Namespace) -> int:
    import json

    import anyio

    from ._trying import call, print_json, search

    if args.command == "search":
        if not args.descriptions.is_dir():
            raise SystemExit(f"mcp-pd search: {args.descriptions} is not a directory")
        from ._search.remote import from_flags

        semantic = from_flags(args, "search") or "auto"
        cache = _vector_cache(args, "search")
        found = anyio.run(
            lambda: search(args.descriptions, args.query, limit=args.limit, semantic=semantic, vector_cache=cache)
        )
        print_json(found)
        return 1 if found["error"] else 0
    try:
        arguments = json.loads(args.arguments)
    except ValueError as exc:
        raise SystemExit(f'mcp-pd call: ARGUMENTS is not JSON ({exc}); e.g. \'{{"city": "Lyon"}}\'') from None
    if not isinstance(arguments, dict):
        raise SystemExit("mcp-pd call: ARGUMENTS must be a JSON object, e.g. '{}'")
    headers = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            raise SystemExit(f"mcp-pd call: --header {header!r} is not 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    if headers and args.stdio:
        raise SystemExit("mcp-pd call: --header applies to --url only")
    target = args.stdio or args.url
    done = anyio.run(
        lambda: call(target, stdio=args.stdio is not None, tool=args.tool, arguments=arguments, headers=headers)
    )
    print_json(done)
    return 1 if done["result"].get("isError") else 0


def _lint_parser(sub: Any) -> None:
    p = sub.add_parser(
        "lint",
        help="check a definitions directory: every file's problems, with its path",
        description="Read every <tool>.json under DIR as a server would and print each problem with its file's path "
        "(broken JSON, invalid schemas, examples the schema rejects, a file named for another tool, two files for "
        "one tool). A file with a description and an inputSchema defines a tool whole; one without them is an "
        "overlay that adds examples, guidance, a better description or annotations to the tool the server "
        "registers under that name. Exit status 1 when there is a problem.",
    )
    p.add_argument("descriptions", type=Path, metavar="DIR", help="directory of <tool>.json definitions")


def _lint(args: argparse.Namespace) -> int:
    from ._model import example_problems
    from ._store import DescriptionStore

    logging.getLogger("mcp_pd").setLevel(logging.ERROR)  # each problem is printed once, below, not logged too
    store = DescriptionStore(args.descriptions)
    problems = [str(problem) for problem in store.problems]
    for name in sorted(store.names()):
        definition = store.get(name)
        if definition is not None and not store.is_overlay(name):  # an overlay's examples meet the server's schema
            path = store.directory / f"{name}.json" if store.directory else name
            problems += [f"{path}: example {i + 1}: {why}" for i, why in example_problems(definition).items()]
    overlays = sum(store.is_overlay(name) for name in store.names())
    for line in problems:
        print(line)
    print(
        f"mcp-pd lint: {len(store)} definition(s) in {args.descriptions}: {len(store) - overlays} whole, {overlays} "
        f"overlay(s) (each adds to the tool the server registers under its name); {len(problems)} problem(s)",
        file=sys.stderr,
    )
    return 1 if problems else 0


def _index_parser(sub: Any) -> None:
    p = sub.add_parser(
        "index",
        help="embed a definitions directory's tools into the vector cache, so catalog-mode servers start with them",
        description="Embed every tool of DIR (as `mcp-pd serve --simulate --descriptions DIR --mode catalog` serves "
        "them) into the vector cache. Servers and gateways started later in catalog mode over the same "
        "definitions rank with vectors from their first search. Needs the semantic extra.",
    )
    p.add_argument("descriptions", type=Path, metavar="DIR", help="directory of <tool>.json definitions")
    _cache_flags(p)


def _index(args: argparse.Namespace) -> int:
    from .reference import serve_simulation

    if args.no_cache:
        raise SystemExit("mcp-pd index: --no-cache leaves nothing to do (index writes the vector cache)")
    if not args.descriptions.is_dir():
        raise SystemExit(f"mcp-pd index: {args.descriptions} is not a directory")
    from ._search.remote import from_flags

    semantic = from_flags(args, "index") or "auto"
    _, pd = serve_simulation(
        args.descriptions, mode="catalog", watch=False, vector_cache=_vector_cache(args, "index"), semantic=semantic
    )
    assert pd.metatools is not None  # catalog mode
    index = pd.metatools.index
    try:
        import anyio

        tools, embedded = anyio.run(index.embed_all)
    except RuntimeError as exc:
        raise SystemExit(f"mcp-pd index: {exc}") from None
    store = index.store
    assert store is not None
    if not store.available:
        raise SystemExit(f"mcp-pd index: the vector cache is unusable: {store!r}")
    print(f"mcp-pd: {tools} tools: {embedded} embedded, {tools - embedded} already cached, in {store.path}")
    return 0


def _count(text: str) -> int:
    """A whole number, 0 or more (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _seconds(text: str) -> float:
    """A finite number of seconds, 0 or more (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, not {text}")
    return value


def _positive(parse: Callable[[str], float]) -> Callable[[str], float]:
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
        type=_count,
        metavar="N",
        help=f"open sessions at once; one more gets 503 until one ends (default {d.max_sessions}; 0: no cap)",
    )
    g.add_argument(
        "--session-idle-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="end a session (and its grants) after this long with no request in flight; an open SSE stream counts "
        f"as one (default {d.session_idle_timeout:g}; 0: never)",
    )
    g.add_argument(
        "--max-body-size",
        type=_positive(_count),
        metavar="BYTES",
        help=f"largest request body; larger ones get 413 (default {d.max_body_bytes})",
    )
    g.add_argument(
        "--request-timeout",
        type=_positive(_seconds),
        metavar="SECONDS",
        help="time a client has to send a request's headers (from connecting, or from the request's first byte), "
        "and again its body, before it gets 408 and is disconnected; responses, SSE streams included, are not "
        "limited "
        f"(default {d.request_timeout:g})",
    )
    g.add_argument(
        "--write-timeout",
        type=_positive(_seconds),
        metavar="SECONDS",
        help="time a client may leave its response unread (it reads nothing while the server has bytes for it) "
        "before it is disconnected and what the server held for it is let go; a client that reads, however "
        f"slowly, is not cut off (default {d.write_timeout:g})",
    )
    g.add_argument(
        "--keep-alive-timeout",
        type=_positive(_seconds),
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
    from ._auth import StaticTokenVerifier
    from ._http import HttpLimits, admin_token, transport_security

    given = [dest for dest in _HTTP_FLAGS if getattr(args, dest) not in (None, [])]
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
        clients = StaticTokenVerifier.from_file(args.bearer_tokens) if args.bearer_tokens is not None else None
        token = admin_token(args.admin_token_file, os.environ)
        import anyio

        if token is not None and clients is not None and anyio.run(clients.verify_token, token) is not None:
            raise ValueError("the operator token is also a client token in --bearer-tokens: give it one of its own")
    except ValueError as exc:
        raise SystemExit(f"mcp-pd {command}: {exc}") from None
    return HttpSettings(limits, security, clients, token)


def _build(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from ._policy import RateLimit
    from .reference import build_reference_server, serve_simulation

    options: dict[str, Any] = {
        "sessionless": args.sessionless,
        "watch": not args.no_watch,
        "list_annotations": args.list_annotations,
        "fetch_rate": RateLimit(args.fetch_rate, args.fetch_burst) if args.fetch_rate > 0 else None,
        "mode": args.mode,
        "describe_tool": not args.no_describe_tool,
        "page_size": args.page_size,
    }
    if args.mode == "catalog":
        options["pinned"] = args.pin
        from ._search.remote import from_flags

        endpoint = from_flags(args, "serve")
        if endpoint is not None and args.lexical:
            raise SystemExit("mcp-pd serve: --lexical and --embeddings-url contradict each other")
        options["semantic"] = "off" if args.lexical else (endpoint or "auto")
        options["vector_cache"] = _vector_cache(args, "serve")
    elif args.cache is not None or args.no_cache:
        raise SystemExit("mcp-pd serve: --cache and --no-cache apply to --mode catalog only")
    if args.session_idle_timeout:
        # Grants kept without a transport session (the sessionless policy) expire on the same clock.
        options["session_idle_timeout"] = args.session_idle_timeout
    if args.redis:
        if importlib.util.find_spec("redis") is None:
            raise SystemExit(
                "mcp-pd serve: --redis needs the redis client: pip install 'mcp-progressive-disclosure[redis]'"
            )
        options.update(redis=args.redis, redis_prefix=args.redis_prefix)
    if args.simulate:
        if args.descriptions is None:
            raise SystemExit("mcp-pd serve: --simulate needs --descriptions DIR")
        if not args.descriptions.is_dir():
            raise SystemExit(f"mcp-pd serve: {args.descriptions} is not a directory")
        server, pd = serve_simulation(args.descriptions, **options)
        return server, pd, f"SIMULATION of {args.descriptions}"
    app, pd = build_reference_server(args.descriptions, database=args.database, **options)
    return app, pd, "reference project tracker"


async def _preflight(server: Any, pd: Any) -> list[str]:
    """List the server's tools once so problems are reported at start-up, not at first use."""
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, MCPServer):
        pd.catalog.update(await server.list_tools(), complete=True)
    # A simulated server's catalog is merged by serve_simulation itself.
    problems = len(pd.store.problems)
    # Each problem was logged once when the store found it (mcp_pd.store): counted here, not printed again.
    lines = [
        f"{len(pd.catalog)} tools, {len(pd.store)} JSON definitions"
        + (f", {problems} problem(s) above" if problems else "")
    ]
    lines += [f"orphan: {n}.json describes a tool this server does not have (not served)" for n in pd.catalog.orphans()]
    return lines


def serve_metrics(pd: Any, lowlevel: Any, *, enabled: bool, **views: Any) -> Any:
    """A `Metrics` instrumenting `lowlevel` (None when turned off or the metrics extra is missing)."""
    if not enabled or importlib.util.find_spec("prometheus_client") is None:
        return None
    from collections.abc import Sized

    from ._metrics import Metrics

    grants, catalog, own = pd.grants, pd.catalog, pd.disclosure.own_tools
    metrics = Metrics(
        served=lambda name: name in catalog or name in own,  # the tools listed now, and the meta-tools
        grants=lambda: len(grants) if isinstance(grants, Sized) else None,
        **views,
    )
    metrics.instrument(lowlevel)
    return metrics


def _report_warm_up(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:  # the first search builds it again and says why
        logging.getLogger("mcp_pd.search").warning("search index warm-up failed: %s", task.exception())


def _serve(args: argparse.Namespace) -> int:
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.stdio import stdio_server

    from ._extension import _lowlevel

    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    http = http_settings(args, "serve")  # refused before anything is loaded
    server, pd, label = _build(args)
    lowlevel = _lowlevel(server)

    async def run() -> None:
        for line in await _preflight(server, pd):
            print(f"mcp-pd: {line}", file=sys.stderr)
        if args.redis:
            problem = await pd.grants.ping()
            state = f"unavailable now ({problem}): gated calls fail closed until it answers" if problem else "reachable"
            print(
                f"mcp-pd: grants in Redis at {pd.grants.where} (prefix {args.redis_prefix!r}): {state}", file=sys.stderr
            )
        # Everything built so far (definitions, catalog) lives as long as the server: move it out of the
        # collector's way, so full collections stop walking a large catalog inside request handlers.
        gc.collect()
        gc.freeze()
        pd.start_watching()
        if pd.metatools is not None:
            # Catalog mode: build the search index (and load cached vectors) now, before the first client asks.
            import asyncio

            warm = asyncio.ensure_future(pd.metatools.index.ready())
            warm.add_done_callback(_report_warm_up)
        if args.transport == "stdio":
            print(f"mcp-pd: serving the {label} over stdio; waiting for a client", file=sys.stderr)
            options = lowlevel.create_initialization_options(
                NotificationOptions(tools_changed=True, resources_changed=True)
            )
            async with stdio_server() as (read, write):
                await lowlevel.run(read, write, options)
            return
        from ._http import OperatorAccess, describe_http, http_server
        from ._metrics import PATH, metrics_app

        metrics = serve_metrics(pd, lowlevel, enabled=not args.no_metrics)
        web = http_server(
            lowlevel,
            host=args.host,
            port=args.port,
            security=http.security,
            limits=http.limits,
            stateless=args.stateless,
            log_level=args.log_level.lower(),
            clients=http.clients,
            operator={PATH: metrics_app(metrics)} if metrics is not None else None,
            operator_token=http.operator_token,
        )
        if http.clients is not None:
            print(
                f"mcp-pd: bearer tokens required ({len(http.clients)} known); grants kept per principal",
                file=sys.stderr,
            )
        if metrics is not None:
            access = OperatorAccess(http.operator_token, client_tokens=http.clients is not None)
            print(f"mcp-pd: Prometheus metrics at {access.describe([f'GET {PATH}'])}", file=sys.stderr)
        for line in describe_http(http.limits, http.security, stateless=args.stateless):
            print(f"mcp-pd: {line}", file=sys.stderr)
        if args.stateless and args.bearer_tokens is None and pd.mode != "eager":
            # No session and no principal: nothing can hold a grant, so every gated call would be refused.
            print(
                "mcp-pd: warning: --stateless without --bearer-tokens: no request carries a session or a principal, "
                f"so no grant can be kept and every call of a {pd.mode}-mode tool is refused with SESSION_REQUIRED; "
                "add --bearer-tokens FILE (grants per principal), drop --stateless, or use --mode eager",
                file=sys.stderr,
            )
        print(f"mcp-pd: serving the {label} on http://{args.host}:{args.port}/mcp", file=sys.stderr)
        await web.serve()

    with contextlib.suppress(KeyboardInterrupt):
        import anyio

        anyio.run(run)
    return 0


def _delegate(module: str, argv: Sequence[str]) -> int:
    try:
        entry = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        print(f"mcp-pd: {module} is not installed ({exc})", file=sys.stderr)
        return 4
    result: int = entry.main(list(argv))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `mcp-pd` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "check":
        return _delegate("mcp_pd_conformance", argv[1:])
    if argv and argv[0] == "demo":
        return _delegate("mcp_pd_agent", argv[1:])
    if argv and argv[0] in ("proxy", "export"):
        return _delegate("mcp_pd.gateway", argv)
    parser = argparse.ArgumentParser(prog="mcp-pd", description="MCP Progressive Disclosure (spec v2.1) toolkit")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{serve,check,demo,proxy,export,index,lint,search,call}"
    )
    _serve_parser(sub)
    _index_parser(sub)
    _lint_parser(sub)
    _try_parsers(sub)
    sub.add_parser("check", help="run the conformance suite against a server (mcp-pd check --help)")
    sub.add_parser("demo", help="run the reference agent demo (mcp-pd demo --help)")
    sub.add_parser("proxy", help="serve existing MCP servers through the gateway (mcp-pd proxy --help)")
    sub.add_parser("export", help="write the definitions of existing MCP servers to files (mcp-pd export --help)")
    args = parser.parse_args(argv)
    if args.command == "lint":
        return _lint(args)
    if args.command in ("search", "call"):
        return _try(args)
    if args.command == "index":
        logging.basicConfig(stream=sys.stderr, level="WARNING", format="%(levelname)s %(name)s: %(message)s")
        return _index(args)
    return _serve(args)


if __name__ == "__main__":
    raise SystemExit(main())
