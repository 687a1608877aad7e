"""`mcp-pd proxy` (serve upstream servers through the gateway) and `mcp-pd export` (write their definitions)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcp_pd._audit import add_audit_flags, audit_trail
from mcp_pd._http_flags import HttpSettings, http_flags, http_settings
from mcp_pd._oauth_flags import announce_policy_changes, policy_file
from mcp_pd._redact import redact_logs

from ._config import (
    MAX_MESSAGE_MIB,
    ConfigError,
    UpstreamConfig,
    check_upstreams,
    one_off_stdio,
    one_off_url,
    read_host_config,
)
from ._export import load_cache, write_export
from ._instructions import INSTRUCTIONS_WAIT
from ._lines import MAX_LINE
from ._pool import Upstream, UpstreamPool

if TYPE_CHECKING:
    from ._server import Gateway

__all__ = ["main"]

logger = logging.getLogger("mcp_pd.gateway")


def _upstream_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        help="a host's MCP server list as it writes it: Claude Desktop, Claude Code (.mcp.json), Cursor, Windsurf, "
        "Gemini CLI and Cline (mcpServers), VS Code (servers; JSONC), Zed (context_servers) or Codex CLI (config.toml)",
    )
    p.add_argument(
        "--upstream-stdio",
        action="append",
        default=[],
        metavar='"[NAME=]CMD"',
        help="a stdio upstream command line (repeatable)",
    )
    p.add_argument(
        "--upstream-url", action="append", default=[], metavar="[NAME=]URL", help="a Streamable HTTP upstream"
    )
    p.add_argument(
        "--workspace-folder",
        type=Path,
        metavar="DIR",
        help="what ${workspaceFolder} in the config stands for (without it, entries using it are skipped)",
    )
    p.add_argument("--start-timeout", type=float, default=60.0, help="seconds for an upstream to start (default 60)")
    p.add_argument(
        "--max-message-mib",
        type=int,
        default=MAX_LINE >> 20,
        metavar="N",
        help=f"the largest JSON-RPC message on a pipe, in MiB (default {MAX_LINE >> 20}): each stdio upstream's (a "
        "server's \"maxMessageMiB\" in the config overrides it) and, over stdio, the client's. A result is about twice "
        "its text when the server also sends structuredContent",
    )
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.add_argument("--quiet-upstreams", action="store_true", help="do not copy the upstreams' stderr to ours")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-pd", description="progressive disclosure in front of existing servers")
    sub = parser.add_subparsers(dest="command", required=True)
    proxy = sub.add_parser(
        "proxy",
        help="serve the upstreams' tools with progressive disclosure",
        description="Serve the tools of existing MCP servers (the upstreams: a host's mcpServers file with --config, "
        "or --upstream-stdio / --upstream-url) with progressive disclosure: a minimal tools/list, full definitions "
        "from the tool_descriptions resource and describe_tools, and a call refused until its definition was read "
        "in that session. Over stdio by default (give a host this command instead of its servers), or "
        "--transport http.",
    )
    _upstream_arguments(proxy)
    proxy.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    proxy.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    proxy.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    proxy.add_argument("--mode", choices=("eager", "progressive", "catalog"), default="progressive")
    proxy.add_argument("--descriptions", type=Path, help="override files (<tool>.json) adding examples and guidance")
    proxy.add_argument(
        "--cache",
        type=Path,
        help="exported definitions (mcp-pd export): list and describe without starting upstreams; "
        "each starts on its first call (also used as --descriptions)",
    )
    proxy.add_argument(
        "--vector-cache",
        type=Path,
        metavar="DIR",
        help="catalog mode: keep the search vectors in DIR, shared by every process serving these tools (default: "
        "the user's cache directory, $MCP_PD_CACHE_DIR or ~/.cache/mcp-pd)",
    )
    proxy.add_argument(
        "--no-vector-cache", action="store_true", help="catalog mode: keep search vectors in memory only"
    )
    from mcp_pd._search.remote import add_flags

    add_flags(proxy)  # --embeddings-url/-model/-key-env/-timeout: a deployment's model server
    proxy.add_argument(
        "--serve-while-starting",
        action="store_true",
        help="answer every request at once while upstreams start: tools/list shows the ones up (and --cache), the "
        "rest are announced with tools/list_changed (default: only initialize is answered at once, the rest wait)",
    )
    proxy.add_argument(
        "--instructions-wait",
        type=float,
        default=INSTRUCTIONS_WAIT,
        metavar="SECONDS",
        help="how long initialize may wait, counted from the start, for upstreams whose instructions are not known "
        f"yet (default {INSTRUCTIONS_WAIT:g}; 0: never); the rest come with the first description of their tools",
    )
    proxy.add_argument(
        "--no-instructions-memory",
        action="store_true",
        help="do not remember what each upstream's instructions said at its last start (kept by default in the user's "
        "cache directory, $MCP_PD_CACHE_DIR or ~/.cache/mcp-pd, so a session that begins before it is up has them)",
    )
    proxy.add_argument("--call-timeout", type=float, default=300.0, help="seconds per upstream call (default 300)")
    proxy.add_argument("--fetch-rate", type=float, default=10.0, help="resource reads per second per session (0: off)")
    proxy.add_argument("--fetch-burst", type=int, default=60, help="resource reads allowed at once per session")
    proxy.add_argument("--list-annotations", action="store_true", help="keep title and annotations in tools/list")
    proxy.add_argument("--redis", metavar="URL", help="grants and fetch limits in Redis, shared by gateway replicas")
    proxy.add_argument("--redis-prefix", default="mcp-pd:", help="Redis key prefix, one per deployment")
    proxy.add_argument(
        "--bearer-tokens",
        type=Path,
        metavar="FILE",
        help="HTTP: require these bearer tokens on /mcp; grants per principal. Client tokens never open GET /admin "
        "or GET /metrics: see --admin-token-file",
    )
    proxy.add_argument(
        "--stateless",
        action="store_true",
        help="HTTP: no MCP sessions (every request stands alone), so replicas behind a round-robin balancer need no "
        "sticky sessions; give clients tokens (--oauth-issuer or --bearer-tokens) and --redis so grants follow each "
        "principal. Upstreams cannot then ask clients anything (roots, sampling, elicitation) outside a call",
    )
    proxy.add_argument(
        "--no-lane",
        action="store_true",
        help="stdio: send every call through the SDK's request path (no fast lane for admitted calls); "
        "http: let the SDK serialize large results in one step too (no HTTP lane)",
    )
    proxy.add_argument("--no-metrics", action="store_true", help="HTTP: do not serve GET /metrics (served by default)")
    proxy.add_argument(
        "--no-admin",
        action="store_true",
        help="HTTP: do not serve the operator page at GET /admin (who may open it: see --admin-token-file)",
    )
    http_flags(proxy, operator="GET /admin, GET /metrics")
    add_audit_flags(proxy)
    export = sub.add_parser(
        "export",
        help="write one JSON definition per upstream tool, ready to enrich by hand",
        description="Start the upstreams once and write one <tool>.json per tool they list into --out, ready to "
        "enrich by hand (examples, guidance); a later export refreshes the schemas and keeps what was written by "
        "hand. `mcp-pd proxy --cache DIR` then lists and describes them without starting the upstreams.",
    )
    _upstream_arguments(export)
    export.add_argument("--out", type=Path, required=True, help="directory to write (merged if it exists)")
    return parser


def _configs(
    args: argparse.Namespace, kept: Mapping[str, UpstreamConfig] | None = None
) -> tuple[list[UpstreamConfig], list[str], list[str]]:
    """The upstreams to serve, one line per config entry skipped (with why), and what the file was read as (which
    host's format; each server whose tools the file filters).

    `kept`: on a reload, what is served now. An entry edited into a shape no host accepts keeps its last good
    version running (as a broken edit of the whole file keeps the last good file), said on the entry's line."""
    configs: list[UpstreamConfig] = []
    skipped: list[str] = []
    read: list[str] = []
    if args.config is not None:
        host = read_host_config(args.config, workspace_folder=args.workspace_folder)
        configs, skipped = list(host.upstreams), host.notes()
        held = [(name, why) for name, why in host.malformed if kept is not None and name in kept]
        if held and kept is not None:
            lines = dict(zip((name for name, _ in host.skipped), skipped, strict=True))
            for name, why in held:
                configs.append(kept[name])
                lines[name] = f"server {name!r} still serves its last good version: {why}"
            skipped = list(lines.values())
        read = [f"{args.config}: read as {host.host}, {len(host.upstreams) + len(host.skipped)} server(s)"]
        read += host.filter_notes()
    taken = {c.name for c in configs}
    configs += [one_off_stdio(spec, taken) for spec in args.upstream_stdio]
    configs += [one_off_url(spec, taken) for spec in args.upstream_url]
    if not configs:
        raise ConfigError(
            "no upstream servers: give --config FILE, --upstream-stdio CMD or --upstream-url URL"
            + (f" (every entry of {args.config} is disabled or skipped: {'; '.join(skipped)})" if skipped else "")
        )
    check_upstreams(configs)  # the file's and the flags' names together
    default = args.max_message_mib << 20
    configs = [c if c.max_message is not None else dataclasses.replace(c, max_message=default) for c in configs]
    return configs, skipped, read


async def _stop_on_signal(scope: anyio.CancelScope, pool: UpstreamPool, web: _Web) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for received in signals:
            logger.info("received %s: stopping the upstreams", signal.Signals(received).name)
            if web.server is not None:
                # uvicorn heard the signal too and is shutting down: let it finish (cancelled midway, it printed a
                # CancelledError traceback for its lifespan task), then stop the upstreams under it.
                web.server.should_exit = True
                with anyio.move_on_after(5):
                    await web.done.wait()
            await pool.aclose()
            pool.watchdog.close()
            scope.cancel()
            # The SDK's stdio server reads stdin in a worker thread that cancellation cannot interrupt: with the
            # upstreams already stopped, leave even if that read never returns.
            timer = threading.Timer(2.0, os._exit, (0,))
            timer.daemon = True
            timer.start()
            return


async def _proxy(
    args: argparse.Namespace, configs: list[UpstreamConfig], skipped: list[str], http: HttpSettings
) -> None:
    cached: dict[str, Any] = {}
    if args.cache is not None:
        cached, problems = load_cache(args.cache, [c.name for c in configs])
        for problem in problems:
            print(f"mcp-pd proxy: {problem}", file=sys.stderr)
        for config in configs:  # a cache exported before the file filtered a tool must not serve it either
            if config.tools and config.name in cached:
                kept = config.tools.apply(cached[config.name].tools)[0]
                cached[config.name] = dataclasses.replace(cached[config.name], tools=kept)
    errlog = None if args.quiet_upstreams else sys.stderr
    pool = UpstreamPool(configs, call_timeout=args.call_timeout, start_timeout=args.start_timeout, errlog=errlog)
    if skipped:
        pool.config_note = f"{args.config}: " + "; ".join(skipped)
    async with anyio.create_task_group() as tg:
        # Installed before any upstream starts: a SIGTERM during start-up must also stop them in order.
        web = _Web()
        tg.start_soon(_stop_on_signal, tg.cancel_scope, pool, web)
        async with pool:
            await _serve(args, configs, pool, cached, http, web)
        tg.cancel_scope.cancel()


class _Web:
    """The HTTP server while it serves (None over stdio), and when it has returned: a signal lets it shut down."""

    def __init__(self) -> None:
        self.server: Any = None
        self.done = anyio.Event()


async def _serve(
    args: argparse.Namespace,
    configs: list[UpstreamConfig],
    pool: UpstreamPool,
    cached: Any,
    http: HttpSettings,
    web_state: _Web,
) -> None:
    from mcp.server.lowlevel import NotificationOptions

    from mcp_pd._cli import serve_metrics
    from mcp_pd._policy import RateLimit

    from ._server import build_gateway
    from ._stdio import pipe_stdio

    # Lazy with a cache: only upstreams missing from it start now, the others on their first call. They start in
    # the background: `initialize` is answered at once (a host's connect timeout may be short), the requests after
    # it wait for them unless --serve-while-starting (then each joins the listing, announced, once it has listed).
    starting = [c.name for c in configs if c.name not in cached]
    if starting:  # `npx -y` may take a while on a first run: say what the wait is for
        print(f"mcp-pd proxy: starting {len(starting)} upstream(s): {', '.join(starting)}", file=sys.stderr)
    began = time.monotonic()
    pool.start(starting)
    server, _pd, gateway = build_gateway(
        pool,
        descriptions=args.cache or args.descriptions,
        mode=args.mode,
        cached=cached,
        while_starting=args.serve_while_starting,
        remember_instructions=not args.no_instructions_memory,
        instructions_wait=args.instructions_wait,
        list_annotations=args.list_annotations,
        fetch_rate=RateLimit(args.fetch_rate, args.fetch_burst) if args.fetch_rate > 0 else None,
        **({"redis": args.redis, "redis_prefix": args.redis_prefix} if args.redis else {}),
        principal_keys=getattr(args, "grants_per", None) != "session",  # --grants-per (mcp_pd._oauth_flags)
        **({"permission": args.policy_file.permission} if args.policy_file is not None else {}),
        # Grants kept without a transport session expire on the sessions' clock, as with `mcp-pd serve`.
        **({"session_idle_timeout": args.session_idle_timeout} if args.session_idle_timeout else {}),
        vector_cache=None if args.no_vector_cache else (args.vector_cache or "default"),
        **getattr(args, "semantic", {}),
    )
    if args.policy_file is not None:
        args.policy_file.set_upstream_of(
            lambda name: route.server if (route := gateway.routes.get(name)) is not None else None
        )
        announce_policy_changes(args.policy_file, _pd)
        policy = args.policy_file
        gateway.content.allowed = lambda ctx, upstream: policy.upstream_permission(
            ctx, upstream, (name for name, route in gateway.routes.items() if route.server == upstream)
        )
        print(f"mcp-pd proxy: {args.policy_file.policy.describe()}", file=sys.stderr)
    audit = args.audit_trail
    if audit is not None:
        audit.instrument(server)
        if http.clients is not None:
            http.clients.refusals.append(audit.refused_at_the_door)
        print(f"mcp-pd proxy: audit trail (one JSON line per decision) to {audit.where()}", file=sys.stderr)
    # Served over stdio the gateway has one client; over HTTP, a client silent for the sessions' idle timeout
    # counts as gone once another needs the upstream session it held (gateway/_roots.py).
    pool.bridge.single_client = args.transport == "stdio"
    if args.session_idle_timeout:
        pool.bridge.roots.idle = args.session_idle_timeout
    if pool.task_group is not None:
        freeze = args.transport == "http"
        pool.task_group.start_soon(_report_start, pool, gateway, starting, began, freeze)
    if args.config is not None and pool.task_group is not None:
        pool.task_group.start_soon(_watch_config, args, pool)
    if args.transport == "stdio":
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        from ._lane import StdioLane

        # Admitted calls over stdio skip the SDK's request path (gateway/_lane.py; the README says what it takes).
        # The lane answers calls without the request handlers: an audited gateway sends each through them.
        lane = None if args.no_lane or audit is not None else StdioLane(gateway, _pd)
        async with pipe_stdio(lane, limit=args.max_message_mib << 20) as (read, write):
            await server.run(read, write, options)
        if lane is not None:  # for whoever tunes the gateway, not the user: what the fast lane took
            logger.info("the stdio lane answered %d call(s)", lane.taken)
        print("mcp-pd proxy: the client disconnected; stopping the upstreams", file=sys.stderr)
        # An HTTP upstream's stream torn down mid-event makes the SDK's client log a traceback: nothing went wrong.
        logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
        return
    from mcp_pd._cli import metrics_routes
    from mcp_pd._http import OperatorAccess, describe_http, http_server
    from mcp_pd._memory import return_big_frees

    return_big_frees()  # big answers' buffers go back to the system once freed (mcp_pd/_memory.py)

    metrics = serve_metrics(
        _pd,
        server,
        enabled=not args.no_metrics,
        command="proxy",
        upstream_of=lambda name: route.server if (route := gateway.routes.get(name)) is not None else None,
        upstreams=lambda: [
            (name, u.state, u.starts, pool.client_sessions_live(name)) for name, u in pool.upstreams.items()
        ],
    )
    # The operator endpoints: outside the client-token check, behind the operator's own (mcp_pd._http).
    operator: dict[str, Any] = metrics_routes(metrics)
    if not args.no_admin:
        from ._admin import ADMIN_PATH, admin_app

        operator[ADMIN_PATH] = admin_app(pool=pool, gateway=gateway, pd=_pd, metrics=metrics, audit=audit)
    # Large results' content is written in slices by the transport, not at once by the SDK, so one client's
    # big answer holds up no other client (gateway/_http_lane.py). Wrapped last: the metrics see the real result.
    http_lane = None
    if not args.no_lane:
        from ._http_lane import HttpLane

        http_lane = HttpLane()
        http_lane.instrument(server)
    web = http_server(
        server,
        host=args.host,
        port=args.port,
        security=http.security,
        limits=http.limits,
        log_level=args.log_level.lower(),
        stateless=args.stateless,
        clients=http.clients,
        operator=operator,
        operator_token=http.operator_token,
        responses=None if http_lane is None else http_lane.app,
    )
    if http.clients is not None:
        print(f"mcp-pd proxy: {http.clients.description}", file=sys.stderr)
    if operator:
        access = OperatorAccess(http.operator_token, client_tokens=http.clients is not None)
        print(f"mcp-pd proxy: {access.describe([f'GET {path}' for path in operator])}", file=sys.stderr)
    for line in describe_http(http.limits, http.security, stateless=args.stateless):
        print(f"mcp-pd proxy: {line}", file=sys.stderr)
    print(f"mcp-pd proxy: serving on http://{args.host}:{args.port}/mcp", file=sys.stderr)
    _freeze_start_up()  # again once the upstreams started now have listed (_report_start)
    web_state.server = web
    try:
        await web.serve()
    finally:
        web_state.done.set()
    if http_lane is not None:  # for whoever tunes the gateway, not the user
        logger.info("the HTTP lane wrote %d large value(s)", http_lane.taken)


def _freeze_start_up() -> None:
    """Move what start-up built (modules, models, the catalog, upstream listings) out of the collector's way: it lives
    as long as the gateway, and a full collection walking it all held every client up for 0.15-0.5 s while a big
    result passed. As `serve` does."""
    import gc

    gc.collect()
    gc.freeze()


async def _report_start(
    pool: UpstreamPool, gateway: Gateway, starting: list[str], began: float, freeze: bool = False
) -> None:
    """Say on stderr how long each upstream took to start, as it comes up (or why it did not), then the total;
    `freeze`: then freeze what their start built too (they start behind the first freeze)."""
    took: dict[str, float] = {}

    async def one(upstream: Upstream) -> None:
        if await pool.started(upstream):
            took[upstream.name] = time.monotonic() - began
            listed = len(upstream.tools or ())
            print(
                f"mcp-pd proxy: upstream '{upstream.name}' ready after {took[upstream.name]:.1f} s ({listed} tool(s))",
                file=sys.stderr,
            )
            return
        if pool.closing:
            return  # stopped while it started: nothing failed
        why = upstream.reason or f"did not start within {pool.start_timeout:g} s"
        then = "" if upstream.permanent else "; its tools are served once it starts"
        print(f"mcp-pd proxy: upstream '{upstream.name}' {why}{then}", file=sys.stderr)

    async with anyio.create_task_group() as tg:
        for name in starting:
            tg.start_soon(one, pool[name])
    if pool.closing:
        return
    running = sum(u.state == "ready" for u in pool.upstreams.values())
    tools = len(gateway.listing)
    summary = f"{tools} tool{'' if tools == 1 else 's'} from {len(pool.upstreams)} upstream(s), {running} running"
    if took:
        ordered = sorted(took.items(), key=lambda item: item[1])
        summary += " (ready after " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in ordered) + ")"
    print(f"mcp-pd proxy: {summary}", file=sys.stderr)
    if freeze:
        _freeze_start_up()


async def _watch_config(args: argparse.Namespace, pool: UpstreamPool) -> None:
    """Apply every edit of the config file: exactly the upstreams that changed are added, removed or restarted
    (the rest keep their sessions and every client's grants); a broken edit keeps the last good config."""
    from watchfiles import awatch

    path = Path(args.config).resolve()
    # The folder, not the file: editors save by writing a new file and renaming it over the old one. Not its
    # subfolders: setting up a recursive watch of a large folder holds the event loop (and every client) for seconds.
    changes = awatch(
        path.parent, watch_filter=lambda _change, changed: Path(changed) == path, debounce=200, recursive=False
    )
    async for _ in changes:
        try:
            # In a worker thread: whatever is now at the path, reading it must not hold up the clients.
            serving = {name: upstream.config for name, upstream in pool.upstreams.items()}
            configs, skipped, read = await anyio.to_thread.run_sync(_configs, args, serving)
        except Exception as exc:  # ConfigError, or a bug: either way the last good config keeps serving
            if not isinstance(exc, ConfigError):
                logger.exception("reading %s failed", path)
            pool.config_note = f"{path} not reloaded, still serving its last good version: {exc}"
            print(f"mcp-pd proxy: {pool.config_note}", file=sys.stderr)
            continue
        for line in [*read[1:], *skipped]:
            print(f"mcp-pd proxy: {line}", file=sys.stderr)
        done = await pool.reconfigure(configs)
        said = "; ".join(f"{what} {', '.join(names)}" for what, names in done.items() if names) or "nothing changed"
        pool.config_note = f"{path} reloaded at {time.strftime('%H:%M:%S')}: {'; '.join([said, *skipped])}"
        print(f"mcp-pd proxy: {path} reloaded: {said}", file=sys.stderr)


async def _export(args: argparse.Namespace, configs: list[UpstreamConfig]) -> int:
    from mcp_pd._extension import DESCRIBE_TOOL

    async with UpstreamPool(
        configs, start_timeout=args.start_timeout, errlog=None if args.quiet_upstreams else sys.stderr
    ) as pool:
        await pool.start_all()
        listings = {n: u.tools for n, u in pool.upstreams.items() if u.tools is not None}
        failed = [u for u in pool.upstreams.values() if u.tools is None]
        report = write_export(
            args.out,
            listings,
            instructions={n: u.instructions for n, u in pool.upstreams.items()},
            prefixes={c.name: c.prefix for c in configs if c.prefix},
            categories={c.name: c.category for c in configs if c.category},
            reserved=[DESCRIBE_TOOL],
            definitions={n: u.definitions for n, u in pool.upstreams.items()},
        )
    for upstream in failed:
        print(f"mcp-pd export: upstream '{upstream.name}' {upstream.reason}; nothing exported for it", file=sys.stderr)
    for line in report.skipped:
        print(f"mcp-pd export: {line}", file=sys.stderr)
    print(
        f"mcp-pd export: {args.out}: {len(report.written)} written, {len(report.updated)} updated "
        f"(upstream schemas refreshed, hand-written fields kept), {len(report.unchanged)} unchanged "
        f"from {len(listings)} upstream(s)",
        file=sys.stderr,
    )
    return 1 if failed or report.skipped else 0


def main(argv: Sequence[str] | None = None) -> int:
    """`mcp-pd proxy ...` / `mcp-pd export ...` (argv starts with the subcommand)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    redact_logs()  # no token, key or URL credential in the operator's log either
    # Refused (SystemExit, with the reason) before any upstream starts, like `mcp-pd serve`.
    http = http_settings(args, "proxy") if args.command == "proxy" else None
    if args.command == "proxy" and args.stateless and args.transport != "http":
        print("mcp-pd proxy: --stateless applies to --transport http only", file=sys.stderr)
        return 2
    args.audit_trail = audit_trail(args, "proxy") if args.command == "proxy" else None
    args.policy_file = policy_file(args, "proxy") if args.command == "proxy" else None
    args.semantic = _embeddings(args) if args.command == "proxy" else {}  # a bad --embeddings-* exits here
    if not 1 <= args.max_message_mib <= MAX_MESSAGE_MIB:
        print(f"mcp-pd {args.command}: --max-message-mib must be from 1 to {MAX_MESSAGE_MIB}", file=sys.stderr)
        return 2
    if args.workspace_folder is not None:
        if not args.workspace_folder.is_dir():
            print(
                f"mcp-pd {args.command}: --workspace-folder {args.workspace_folder}: not a directory", file=sys.stderr
            )
            return 2
        args.workspace_folder = args.workspace_folder.resolve()
    try:
        configs, skipped, read = _configs(args)
    except ConfigError as exc:
        print(f"mcp-pd {args.command}: {exc}", file=sys.stderr)
        return 2
    # Which host's file it was and what its tool filters serve; one line per entry the gateway cannot serve.
    for line in [*read, *skipped]:
        print(f"mcp-pd {args.command}: {line}", file=sys.stderr)
    if args.command == "export":
        return anyio.run(_export, args, configs)
    try:
        assert http is not None
        anyio.run(_proxy, args, configs, skipped, http)
    except (ValueError, OSError) as exc:
        print(f"mcp-pd proxy: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        # uvicorn exits (SystemExit) when it cannot bind the port, having said why on stderr: no traceback on top.
        stopped = group.subgroup(lambda exc: isinstance(exc, (SystemExit, KeyboardInterrupt)))
        if stopped is None or group.split(lambda exc: isinstance(exc, (SystemExit, KeyboardInterrupt)))[1]:
            raise
        code = next((e.code for e in _leaves(stopped) if isinstance(e, SystemExit)), 0)
        if code:
            print(
                f"mcp-pd proxy: could not serve HTTP on {args.host}:{args.port} (why: the line above)", file=sys.stderr
            )
            sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
    finally:
        if args.audit_trail is not None:
            args.audit_trail.close()  # what is queued is written
    # Leave at once: nothing is left to clean up (the upstreams are stopped), and a worker thread may still block.
    with contextlib.suppress(ValueError, OSError):
        sys.stdout.flush()
    os._exit(0)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _embeddings(args: argparse.Namespace) -> dict[str, Any]:
    """`semantic=` for the extension when --embeddings-url names a model server (else the default)."""
    from mcp_pd._search.remote import from_flags

    endpoint = from_flags(args, "proxy")
    return {} if endpoint is None else {"semantic": endpoint}
