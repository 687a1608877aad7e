"""The shell commands README.md and the docs show, and how the tests run each one (issue 23.2).

`documented()` reads every line of every `bash`/`sh` block; `HOW` says, for each exact command, how
tests/test_doc_commands.py runs it. tests/test_readme.py checks that the two agree both ways, so a command added to
the docs without a way to run it (or a stale entry here) fails the fast tests.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pdtest import ROOT

DOCS: Final = (
    "README.md",
    "docs/architecture.md",
    "docs/extension.md",
    "docs/gateway.md",
    "docs/search.md",
    "docs/agents.md",
    "docs/team.md",
    "agent_demo/README.md",
    "benchmarks/README.md",
)

Kind = Literal["stdio", "exit0", "refused", "http", "export", "wheel", "install", "inspector", "hand"]

# How each command is run, in a copy of the checkout whose `.venv` and `../shared` are the real ones:
#   stdio    an MCP client starts it and lists its tools
#   exit0    it runs to completion and exits 0
#   refused  it stops at once with exit 2 and a message that names what is missing (the text after the kind)
#   http     it serves on port 8000 and an MCP client (or, for the Host check, a raw request) gets an answer
#   export   one of the export-enrich-serve lines, run in order against a real npm upstream
#   wheel    one of the "Installing from a wheel" lines, run in order
#   install  one of the README's "Install" lines, run in a fresh venv (the git one with REPO_URL a local clone's)
#   inspector the Inspector-with-token recipe: the server, then each npx line in order, with TOKEN one of tokens.json
#   hand     not run by the tests, for the reason given
HOW: Final[dict[str, tuple[Kind, str]]] = {
    "mcp-pd proxy --config servers.json --transport http --host 0.0.0.0 --port 8000 --allowed-host mcp.example.com "
    "--oauth-issuer https://idp.example.com/realms/team --oauth-resource https://mcp.example.com/mcp "
    "--oauth-scope mcp:tools": (
        "hand",
        "needs your identity provider; tests/oauth runs these flags against a real OpenID provider (oidc-provider)",
    ),
    'mcp-pd check --url https://mcp.example.com/mcp --header "Authorization: Bearer $TOKEN"': (
        "hand",
        "needs a deployment and a token; tests/oauth/test_gateway_oauth.py runs it against the gateway with one",
    ),
    "MCP_TOKEN=... ./dev mcp-pd check --url https://mcp.example.com/mcp --bearer-env MCP_TOKEN": (
        "hand",
        "needs a deployment and its token; tests/conformance/test_suite_credentials.py runs --bearer-env against "
        "mcp-pd serve --bearer-tokens",
    ),
    './dev mcp-pd check --url http://127.0.0.1:8000/mcp --header "X-Team: search" --header-env "X-Api-Key=API_KEY"': (
        "hand",
        "needs a server that wants these headers; tests/conformance/test_suite_credentials.py runs --header and "
        "--header-env against mcp-pd serve --bearer-tokens",
    ),
    "./dev serve": ("stdio", ""),
    "./dev serve --transport http --port 8000 --bearer-tokens tokens.json": ("inspector", ""),
    'npx -y @modelcontextprotocol/inspector@2 --cli http://127.0.0.1:8000/mcp --header "Authorization: Bearer $TOKEN" '
    '--method resources/read --uri "resource:///tool_descriptions?tools=calculate"': ("inspector", ""),
    'npx -y @modelcontextprotocol/inspector@2 --cli http://127.0.0.1:8000/mcp --header "Authorization: Bearer $TOKEN" '
    '--method tools/call --tool-name calculate --tool-arg "expression=6*7"': ("inspector", ""),
    "pip install .": ("install", ""),
    "pip install -e .": ("install", ""),
    'pip install ".[fastmcp]"': ("install", ""),
    'pip install "mcp-progressive-disclosure @ git+$REPO_URL"': ("install", ""),
    "./dev test": ("hand", "the test command itself: .ci/run runs it on every push (test_readme checks that)"),
    "./dev serve --simulate --descriptions ../shared/catalogs --mode catalog": ("stdio", ""),
    "./dev mcp-pd index ../shared/catalogs": ("exit0", ""),
    "./dev serve --transport http --redis redis://127.0.0.1:6379/0 --redis-prefix myapp: --bearer-tokens tokens.json": (
        "http",
        "",
    ),
    "./dev serve --transport http --port 8000": ("http", ""),
    "./dev serve --simulate --descriptions ../shared/catalogs/github-mcp-server": ("stdio", ""),
    "./dev serve --transport http --host 0.0.0.0 --allowed-host mcp.example.com "
    "--allowed-origin https://app.example.com": ("http", ""),
    './dev mcp-pd check --stdio "python -m mcp_pd serve"': ("exit0", ""),
    './dev mcp-pd check --stdio "python -m mcp_pd serve --mode catalog" --profile tool-fallback,catalog': ("exit0", ""),
    "./dev mcp-pd demo": ("exit0", ""),
    """./dev mcp-pd call --stdio "python -m mcp_pd serve" list_projects '{}'""": ("exit0", ""),
    './dev mcp-pd search ../shared/catalogs/github-mcp-server "open a pull request"': ("exit0", ""),
    "./dev mcp-pd demo --host tools-only": ("exit0", ""),
    "./dev mcp-pd demo --mode catalog": ("exit0", ""),
    "./dev mcp-pd demo --ledger-catalog ../shared/catalogs": ("exit0", ""),
    "./dev mcp-pd demo --backend anthropic": ("refused", "ANTHROPIC_API_KEY"),
    "mcp-pd export --config servers.json --out defs/": ("export", ""),
    "$EDITOR defs/create_entities.json": ("export", ""),
    "mcp-pd proxy --config servers.json --cache defs/": ("export", ""),
    ".venv/bin/python -m build --outdir dist/": ("wheel", ""),
    "python3 -m venv /tmp/pd && /tmp/pd/bin/pip install dist/mcp_progressive_disclosure-0.1.0-py3-none-any.whl": (
        "wheel",
        "",
    ),
    "/tmp/pd/bin/mcp-pd serve": ("wheel", ""),
    '/tmp/pd/bin/mcp-pd check --stdio "/tmp/pd/bin/mcp-pd serve"': ("wheel", ""),
    "/tmp/pd/bin/mcp-pd demo": ("wheel", ""),
    "/tmp/pd/bin/pip install 'dist/mcp_progressive_disclosure-0.1.0-py3-none-any.whl[redis,semantic]'": ("wheel", ""),
    "/tmp/pd/bin/pip install 'dist/mcp_progressive_disclosure-0.1.0-py3-none-any.whl[semantic]'": ("wheel", ""),
    "mcp-pd demo": ("exit0", ""),
    "mcp-pd demo --host tools-only": ("exit0", ""),
    "mcp-pd demo --host both": ("exit0", ""),
    "mcp-pd demo --mode catalog": ("exit0", ""),
    "mcp-pd demo --host both --mode both": ("exit0", ""),
    "mcp-pd demo --task create-assign": ("exit0", ""),
    "mcp-pd demo --ledger-catalog ../shared/catalogs --svg agent_demo/ledger.svg --json demo.json": ("exit0", ""),
    "mcp-pd demo --backend anthropic": ("refused", "ANTHROPIC_API_KEY"),
    "mcp-pd demo --backend openai --model gpt-5.5": ("refused", "OPENAI_API_KEY"),
    "mcp-pd demo --backend openai --base-url http://127.0.0.1:8080/v1 --model qwen3-8b": ("refused", "--base-url"),
    "mcp-pd demo --url http://127.0.0.1:8000/mcp": ("http", ""),
    'mcp-pd demo --backend anthropic --prompt "Which of bob\'s tasks are overdue?"': ("refused", "ANTHROPIC_API_KEY"),
    "mcp-pd demo --host both --mode both --ledger-catalog ../shared/catalogs --svg agent_demo/ledger.svg "
    "--json agent_demo/ledger.json --markdown agent_demo/README.md --markdown README.md": ("exit0", ""),
    "./dev bench": ("hand", "the whole benchmark run: about 11 minutes of both cores, results committed"),
    "python -m benchmarks": ("hand", "the same run as ./dev bench"),
    "python -m benchmarks --quick": ("hand", "3 minutes of both cores; each module's own command is run below"),
    "python -m benchmarks.context": ("exit0", ""),
    "python -m benchmarks.report --write": ("exit0", ""),
}

_BLOCK = re.compile(r"^[ \t]*```(?:bash|sh|shell)\n(.*?)^[ \t]*```", re.S | re.M)
_COMMENT = re.compile(r"\s+#\s.*$")


def documented() -> dict[str, list[str]]:
    """Every command in a shell block of the docs (continuation lines joined, comments dropped): the files."""
    found: dict[str, list[str]] = {}
    for name in DOCS:
        text = (ROOT / name).read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            joined = re.sub(r"\\\n\s*", "", block.group(1))
            for line in joined.splitlines():
                command = _COMMENT.sub("", line).strip()
                if command:
                    found.setdefault(command, []).append(name)
    return found


def commands(kind: Kind) -> list[str]:
    """The commands run one way, in the order the docs give them. A bare `mcp-pd ...` that the docs also show as
    `./dev mcp-pd ...` is the same program with the same arguments (./dev puts the venv first on PATH and runs it):
    it is run once, through ./dev."""
    order = list(documented())
    chosen = [c for c, (k, _) in HOW.items() if k == kind and HOW.get(f"./dev {c}", ("", ""))[0] != kind]
    return sorted(chosen, key=lambda c: order.index(c) if c in order else 0)
