"""`mcp-pd --help` starts at once: it imports none of the `mcp` SDK (issue 32: 1.5-2 s on a quiet machine, 31 s at
load 11, almost all of it importing the SDK). Checked by what a fresh interpreter has imported, not by a clock: the
timing lives in benchmarks/cli.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import sys
from mcp_pd._cli import main
try:
    main({argv!r})
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "pydantic", "starlette", "uvicorn")))
print(code, heavy)
"""


def _imported(argv: list[str]) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True, text=True, timeout=120, check=True
    )
    code, _, heavy = done.stdout.strip().rpartition("\n")[2].partition(" ")
    return code, heavy


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["serve", "--help"],
        ["index", "--help"],
        ["lint", "--help"],
        ["search", "--help"],
        ["call", "--help"],
    ],
)
def test_help_imports_no_sdk(argv: list[str]) -> None:
    code, heavy = _imported(argv)
    assert code == "0"
    assert heavy == "[]", f"mcp-pd {' '.join(argv)} imported {heavy}"


def test_the_package_imports_no_sdk_until_something_is_used() -> None:
    probe = (
        "import sys, mcp_pd; print('mcp' in sys.modules); "
        "mcp_pd.ProgressiveDisclosure; print('mcp' in sys.modules, mcp_pd.ProgressiveDisclosure.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "True", "mcp_pd._extension"]
