"""Who may use which tool (`--policy FILE`): subjects, groups and scopes mapped to the upstreams and tool names they
may use, deny winning; reloaded when the file changes.

The policy is a `ToolPermission` (`_policy.py`), the extension's primary authorization hook: a tool it refuses is
absent from `tools/list`, unknown to reads, `describe_tools`, `search_tools`/`browse_tools`, `call_tool` and direct
calls, and never suggested ("did you mean") or counted in `available_tools`, because every one of those asks the
hook. The file (TOML):

    groups_claim = "groups"        # the token claim holding a principal's groups (default "groups")

    [[allow]]
    groups = ["engineering"]       # who: subjects, groups, scopes (any of them matches), or everyone = true
    upstreams = ["github", "mem*"] # which upstreams' tools (gateway; default all) ...
    tools = ["*"]                  # ... and which tool names (fnmatch patterns on the served name; default all)

    [[deny]]
    subjects = ["bob"]
    tools = ["delete_*"]

A tool is usable when some `allow` rule covers the principal and the tool, and no `deny` rule does. A request
without a token is the principal nobody names: only `everyone = true` rules cover it.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import logging
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ._policy import Caller

__all__ = ["AccessPolicy", "PolicyFile", "Principal"]

logger = logging.getLogger("mcp_pd.access")

_MAX_FILE: Final = 1024 * 1024
_RULE_KEYS: Final = frozenset({"subjects", "groups", "scopes", "everyone", "upstreams", "tools"})
_CACHED_PRINCIPALS: Final = 4096  # decisions kept per principal, for this many principals at most


@dataclass(frozen=True)
class Principal:
    """What a rule can match: the token's subject, its groups (the claim the policy names) and scopes."""

    subject: str | None
    groups: frozenset[str]
    scopes: frozenset[str]


def _patterns(values: Iterable[str]) -> re.Pattern[str] | None:
    listed = list(values)
    if not listed:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(v)})" for v in listed))


@dataclass(frozen=True)
class _Rule:
    subjects: frozenset[str]
    groups: frozenset[str]
    scopes: frozenset[str]
    everyone: bool
    upstreams: re.Pattern[str] | None  # None: every upstream
    tools: re.Pattern[str] | None  # None: every tool

    def covers(self, who: Principal) -> bool:
        if self.everyone:
            return True
        return (
            (who.subject is not None and who.subject in self.subjects)
            or not self.groups.isdisjoint(who.groups)
            or not self.scopes.isdisjoint(who.scopes)
        )

    def names(self, tool: str, upstream: str | None) -> bool:
        if self.tools is not None and self.tools.fullmatch(tool) is None:
            return False
        if self.upstreams is not None:
            return upstream is not None and self.upstreams.fullmatch(upstream) is not None
        return True


def _strings(where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: expected a list of non-empty strings")
    return list(value)


def _rule(where: str, table: Any) -> _Rule:
    if not isinstance(table, dict):
        raise ValueError(f"{where}: expected a table")
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_RULE_KEYS))})")
    everyone = table.get("everyone", False)
    if not isinstance(everyone, bool):
        raise ValueError(f"{where}.everyone: expected true or false")
    who = {k: frozenset(_strings(f"{where}.{k}", table.get(k, []))) for k in ("subjects", "groups", "scopes")}
    if not everyone and not any(who.values()):
        raise ValueError(f"{where}: names nobody: give subjects, groups, scopes or everyone = true")
    return _Rule(
        everyone=everyone,
        upstreams=_patterns(_strings(f"{where}.upstreams", table["upstreams"])) if "upstreams" in table else None,
        tools=_patterns(_strings(f"{where}.tools", table["tools"])) if "tools" in table else None,
        **who,
    )


class AccessPolicy:
    """A parsed policy: `allowed(principal, tool, upstream)`, and `permission`, the extension's hook."""

    def __init__(self, allow: list[_Rule], deny: list[_Rule], groups_claim: str = "groups", source: str = "") -> None:
        self.allow, self.deny, self.groups_claim, self.source = allow, deny, groups_claim, source
        self.upstream_of: Callable[[str], str | None] = lambda name: None
        # Per principal: (tool, its upstream now) -> allowed. The upstream is part of the key because a config
        # reload may move a name to another upstream.
        self._decided: dict[Principal, dict[tuple[str, str | None], bool]] = {}

    @classmethod
    def parse(cls, text: str, *, source: str = "policy") -> AccessPolicy:
        """ValueError saying where the text is wrong."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{source}: not TOML: {exc}") from None
        unknown = sorted(set(data) - {"groups_claim", "allow", "deny"})
        if unknown:
            raise ValueError(f"{source}: unknown key {unknown[0]!r} (known: groups_claim, allow, deny)")
        claim = data.get("groups_claim", "groups")
        if not isinstance(claim, str) or not claim:
            raise ValueError(f"{source}: groups_claim must be a claim name")
        rules = {}
        for kind in ("allow", "deny"):
            tables = data.get(kind, [])
            if not isinstance(tables, list):
                raise ValueError(f"{source}: [{kind}] must be [[{kind}]] tables")
            rules[kind] = [_rule(f"{source}: {kind}[{i}]", t) for i, t in enumerate(tables)]
        if not rules["allow"]:
            raise ValueError(f"{source}: no [[allow]] rule: every tool would be hidden from everyone")
        return cls(rules["allow"], rules["deny"], claim, source)

    @classmethod
    def from_file(cls, path: Path) -> AccessPolicy:
        try:
            with path.open("rb") as fh:
                raw = fh.read(_MAX_FILE + 1)
        except OSError as exc:
            raise ValueError(f"cannot read the policy file {path}: {exc}") from None
        if len(raw) > _MAX_FILE:
            raise ValueError(f"the policy file {path} is larger than {_MAX_FILE} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"the policy file {path} is not UTF-8: {exc}") from None
        return cls.parse(text, source=str(path))

    def allowed(self, who: Principal, tool: str, upstream: str | None = None) -> bool:
        """Deny wins; then some allow rule must cover both the principal and the tool."""
        if any(r.covers(who) and r.names(tool, upstream) for r in self.deny):
            return False
        return any(r.covers(who) and r.names(tool, upstream) for r in self.allow)

    def principal(self, claims: Mapping[str, Any] | None, subject: str | None, scopes: Iterable[str]) -> Principal:
        groups = (claims or {}).get(self.groups_claim)
        if isinstance(groups, str):
            groups = groups.split()
        listed = frozenset(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else frozenset()
        return Principal(subject, listed, frozenset(scopes))

    def uses_upstream(self, who: Principal, upstream: str, tools: Iterable[str]) -> bool:
        """Whether `who` may see `upstream`'s resources, prompts and completions: a rule allows it the whole
        upstream (no `tools` pattern), or one of its `tools`, and no deny rule takes the whole upstream away."""
        whole = [r for r in self.deny if r.tools is None and r.covers(who)]
        if any(r.upstreams is None or r.upstreams.fullmatch(upstream) for r in whole):
            return False
        if any(r.covers(who) and r.tools is None and r.names("", upstream) for r in self.allow):
            return True
        return any(self.allowed(who, tool, upstream) for tool in tools)

    def who(self, context: Any) -> Principal:
        """The principal of a request (its SDK context): the token's subject, groups and scopes, or nobody."""
        from ._sessions import access_token

        token = access_token(context)
        if token is None:
            return Principal(None, frozenset(), frozenset())
        return self.principal(token.claims, token.subject, token.scopes)

    def permission(self, caller: Caller, name: str) -> bool:
        """The `ToolPermission`: asked once per tool per request, so decisions are kept per principal."""
        who = self.who(caller.context)
        decided = self._decided.get(who)
        if decided is None:
            if len(self._decided) >= _CACHED_PRINCIPALS:
                self._decided.clear()  # bounded: many principals cost recomputation, never memory
            decided = self._decided[who] = {}
        upstream = self.upstream_of(name)
        verdict = decided.get((name, upstream))
        if verdict is None:
            verdict = decided[(name, upstream)] = self.allowed(who, name, upstream)
        return verdict

    def forget_decisions(self) -> None:
        """After the tools changed (a name may now belong to another upstream)."""
        self._decided.clear()

    def describe(self) -> str:
        return (
            f"policy {self.source}: {len(self.allow)} allow and {len(self.deny)} deny rule(s), groups from the "
            f"{self.groups_claim!r} claim; a tool no rule allows, or one denied, does not exist for that principal"
        )


class PolicyFile:
    """The policy a file holds now. `permission` (the extension's hook: `ProgressiveDisclosure(permission=
    PolicyFile(path).permission)`) always asks the last good version, and its first use starts watching the file:
    a change is reloaded (a broken edit is logged and the last good policy stays), then each of `listeners` is
    called (e.g. to tell clients to list again)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.policy = AccessPolicy.from_file(path)  # ValueError at start-up: a server never starts without it
        self._upstream_of: Callable[[str], str | None] = lambda name: None
        self.listeners: list[Callable[[], Any]] = []
        self.reloads = 0
        self._task: asyncio.Task[None] | None = None

    def set_upstream_of(self, upstream_of: Callable[[str], str | None]) -> None:
        """Which upstream serves a tool (the gateway's routes), for rules naming upstreams."""
        self._upstream_of = upstream_of
        self.policy.upstream_of = upstream_of
        self.policy.forget_decisions()

    def permission(self, caller: Caller, name: str) -> bool:
        if self._task is None or self._task.done():
            self.start_watching()
        return self.policy.permission(caller, name)

    def upstream_permission(self, context: Any, upstream: str, tools: Iterable[str]) -> bool:
        """Whether the request's principal may see `upstream` at all (its resources, prompts, completions)."""
        policy = self.policy
        return policy.uses_upstream(policy.who(context), upstream, tools)

    def start_watching(self) -> None:
        """Watch the file from now on (in the running event loop); the first `permission` call does it too."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # asked outside a loop (a test's direct call): nothing to watch from
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._watch(), name="mcp-pd policy watcher")

    def stop_watching(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def reload(self) -> bool:
        """Read the file again; True when the new policy is in force."""
        try:
            policy = AccessPolicy.from_file(self.path)
        except ValueError as exc:
            logger.error("%s; the policy in force stays", exc)
            return False
        policy.upstream_of = self._upstream_of
        self.policy = policy
        self.reloads += 1
        logger.warning("policy reloaded from %s", self.path)
        return True

    async def _watch(self) -> None:
        import watchfiles

        target = self.path.resolve()
        try:
            async for changes in watchfiles.awatch(target.parent, debounce=200, step=50):
                if any(Path(p).resolve() == target for _, p in changes) and self.reload():
                    for listener in list(self.listeners):
                        try:
                            result = listener()
                            if inspect.isawaitable(result):
                                await result
                        except Exception:  # one listener failing must not stop the watch
                            logger.exception("a listener of the policy's reload failed")
        except asyncio.CancelledError:
            raise
        except Exception:  # a watch that dies leaves the last policy in force, and says so
            logger.exception("watching the policy file %s stopped; the policy in force stays", self.path)
