"""`mcp-pd proxy` (serve upstream servers through the gateway) and `mcp-pd export` (write their definitions)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcp_pd._cli import HttpSettings, http_flags, http_settings

from ._config import ConfigError, UpstreamConfig, check_upstreams, one_off_stdio, one_off_url, read_host_config
from ._export import load_cache, write_export
from ._pool import Upstream, UpstreamPool

if TYPE_CHECKING:
    from ._server import Gateway

__all__ = ["main"]

logger = logging.getLogger("mcp_pd.gateway")


def _upstream_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help='a {"mcpServers": {...}} file (Claude Desktop, Cursor, VS Code)')
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
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.add_argument("--quiet-upstreams", action="store_true", help="do not copy the upstreams' stderr to ours")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-pd", description="progressive disclosure in front of existing servers")
    sub = parser.add_subparsers(dest="command", required=True)
    proxy = sub.add_parser("proxy", help="serve the upstreams' tools with progressive disclosure")
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
        "--no-lane",
        action="store_true",
        help="stdio: send every call through the SDK's request path (no fast lane for admitted calls); "
        "http: let the SDK serialize large results in one step too (no HTTP lane)",
    )
    proxy.add_argument(
        "--no-metrics", action="store_true", help="HTTP: do not serve GET /metrics (on with the metrics extra)"
    )
    proxy.add_argument(
        "--no-admin",
        action="store_true",
        help="HTTP: do not serve the operator page at GET /admin (who may open it: see --admin-token-file)",
    )
    http_flags(proxy, operator="GET /admin, GET /metrics")
    export = sub.add_parser("export", help="write one JSON definition per upstream tool, ready to enrich by hand")
    _upstream_arguments(export)
    export.add_argument("--out", type=Path, required=True, help="directory to write (merged if it exists)")
    return parser


def _configs(args: argparse.Namespace) -> tuple[list[UpstreamConfig], list[str]]:
    """The upstreams to serve, and one line per config entry skipped (with why)."""
    configs: list[UpstreamConfig] = []
    skipped: list[str] = []
    if args.config is not None:
        host = read_host_config(args.config, workspace_folder=args.workspace_folder)
        configs, skipped = host.upstreams, host.notes()
    taken = {c.name for c in configs}
    configs += [one_off_stdio(spec, taken) for spec in args.upstream_stdio]
    configs += [one_off_url(spec, taken) for spec in args.upstream_url]
    if not configs:
        raise ConfigError(
            "no upstream servers: give --config FILE, --upstream-stdio CMD or --upstream-url URL"
            + (f" (every entry of {args.config} is disabled or skipped: {'; '.join(skipped)})" if skipped else "")
        )
    check_upstreams(configs)  # the file's and the flags' names together
    return configs, skipped


async def _stop_on_signal(scope: anyio.CancelScope, pool: UpstreamPool) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for received in signals:
            logger.info("received %s: stopping the upstreams", signal.Signals(received).name)
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
    errlog = None if args.quiet_upstreams else sys.stderr
    pool = UpstreamPool(configs, call_timeout=args.call_timeout, start_timeout=args.start_timeout, errlog=errlog)
    if skipped:
        pool.config_note = f"{args.config}: " + "; ".join(skipped)
    async with anyio.create_task_group() as tg:
        # Installed before any upstream starts: a SIGTERM during start-up must also stop them in order.
        tg.start_soon(_stop_on_signal, tg.cancel_scope, pool)
        async with pool:
            await _serve(args, configs, pool, cached, http)
        tg.cancel_scope.cancel()


async def _serve(
    args: argparse.Namespace, configs: list[UpstreamConfig], pool: UpstreamPool, cached: Any, http: HttpSettings
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
        list_annotations=args.list_annotations,
        fetch_rate=RateLimit(args.fetch_rate, args.fetch_burst) if args.fetch_rate > 0 else None,
        **({"redis": args.redis, "redis_prefix": args.redis_prefix} if args.redis else {}),
        # Grants kept without a transport session expire on the sessions' clock, as with `mcp-pd serve`.
        **({"session_idle_timeout": args.session_idle_timeout} if args.session_idle_timeout else {}),
        vector_cache=None if args.no_vector_cache else (args.vector_cache or "default"),
        **getattr(args, "semantic", {}),
    )
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
        lane = None if args.no_lane else StdioLane(gateway, _pd)
        async with pipe_stdio(lane) as (read, write):
            await server.run(read, write, options)
        if lane is not None:  # for whoever tunes the gateway, not the user: what the fast lane took
            logger.info("the stdio lane answered %d call(s)", lane.taken)
        print("mcp-pd proxy: the client disconnected; stopping the upstreams", file=sys.stderr)
        return
    from mcp_pd._http import OperatorAccess, describe_http, http_server
    from mcp_pd._memory import return_big_frees
    from mcp_pd._metrics import PATH, metrics_app

    return_big_frees()  # big answers' buffers go back to the system once freed (mcp_pd/_memory.py)

    metrics = serve_metrics(
        _pd,
        server,
        enabled=not args.no_metrics,
        upstream_of=lambda name: route.server if (route := gateway.routes.get(name)) is not None else None,
        upstreams=lambda: [
            (name, u.state, u.starts, pool.client_sessions_live(name)) for name, u in pool.upstreams.items()
        ],
    )
    # The operator endpoints: outside the client-token check, behind the operator's own (mcp_pd._http).
    operator: dict[str, Any] = {PATH: metrics_app(metrics)} if metrics is not None else {}
    if not args.no_admin:
        from ._admin import ADMIN_PATH, admin_app

        operator[ADMIN_PATH] = admin_app(pool=pool, gateway=gateway, pd=_pd, metrics=metrics)
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
        clients=http.clients,
        operator=operator,
        operator_token=http.operator_token,
        responses=None if http_lane is None else http_lane.app,
    )
    if http.clients is not None:
        known = len(http.clients)
        print(f"mcp-pd proxy: bearer tokens required ({known} known); grants kept per principal", file=sys.stderr)
    if operator:
        access = OperatorAccess(http.operator_token, client_tokens=http.clients is not None)
        print(f"mcp-pd proxy: {access.describe([f'GET {path}' for path in operator])}", file=sys.stderr)
    for line in describe_http(http.limits, http.security):
        print(f"mcp-pd proxy: {line}", file=sys.stderr)
    print(f"mcp-pd proxy: serving on http://{args.host}:{args.port}/mcp", file=sys.stderr)
    _freeze_start_up()  # again once the upstreams started now have listed (_report_start)
    await web.serve()
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
        print(f"mcp-pd proxy: upstream '{upstream.name}' {why}; its tools are served once it starts", file=sys.stderr)

    async with anyio.create_task_group() as tg:
        for name in starting:
            tg.start_soon(one, pool[name])
    if pool.closing:
        return
    running = sum(u.state == "ready" for u in pool.upstreams.values())
    summary = f"{len(gateway.listing)} tools from {len(pool.upstreams)} upstream(s), {running} running"
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
            configs, skipped = await anyio.to_thread.run_sync(_configs, args)
        except Exception as exc:  # ConfigError, or a bug: either way the last good config keeps serving
            if not isinstance(exc, ConfigError):
                logger.exception("reading %s failed", path)
            pool.config_note = f"{path} not reloaded, still serving its last good version: {exc}"
            print(f"mcp-pd proxy: {pool.config_note}", file=sys.stderr)
            continue
        for line in skipped:
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
    # Refused (SystemExit, with the reason) before any upstream starts, like `mcp-pd serve`.
    http = http_settings(args, "proxy") if args.command == "proxy" else None
    args.semantic = _embeddings(args) if args.command == "proxy" else {}  # a bad --embeddings-* exits here
    if args.workspace_folder is not None:
        if not args.workspace_folder.is_dir():
            print(
                f"mcp-pd {args.command}: --workspace-folder {args.workspace_folder}: not a directory", file=sys.stderr
            )
            return 2
        args.workspace_folder = args.workspace_folder.resolve()
    try:
        configs, skipped = _configs(args)
    except ConfigError as exc:
        print(f"mcp-pd {args.command}: {exc}", file=sys.stderr)
        return 2
    # One line per entry the gateway cannot serve; the rest start.
    for line in skipped:
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
    # Leave at once: nothing is left to clean up (the upstreams are stopped), and a worker thread may still block.
    with contextlib.suppress(ValueError, OSError):
        sys.stdout.flush()
    os._exit(0)


def _embeddings(args: argparse.Namespace) -> dict[str, Any]:
    """`semantic=` for the extension when --embeddings-url names a model server (else the default)."""
    from mcp_pd._search.remote import from_flags

    endpoint = from_flags(args, "proxy")
    return {} if endpoint is None else {"semantic": endpoint}
