"""The wheel is the product (issue 12): built, checked, installed into a fresh venv and run from outside the checkout.

One build and one install (module fixtures) serve every test here. The venv gets the wheel alone, its dependencies
from the package index (the pip cache keeps that quick); its commands then run from an empty temporary directory
with no PYTHONPATH, so nothing can be read from the source tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_pd.reference import DEFAULT_DESCRIPTIONS
from pdtest import ROOT

# Each code folder holds one distinctive package; nothing else may land on sys.path.
CODE = {"server": "mcp_pd", "conformance_tests": "mcp_pd_conformance", "agent_demo": "mcp_pd_agent"}
DEFINITIONS = ROOT / "tool_descriptions"
SHIPPED_DEFINITIONS = "mcp_pd/reference/tool_descriptions"  # where the wheel carries tool_descriptions/
TIMEOUT = 600  # generous: a cold pip cache downloads every dependency once


def run(argv: Sequence[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a command to completion; on failure, show its output (the point of every assertion below)."""
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout


def build(source: Path, out: Path, *kinds: str) -> None:
    # Without isolation: the backend comes from the dev extra, so no index lookup per build.
    run([sys.executable, "-m", "build", "--no-isolation", *kinds, "--outdir", out, source])


def one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {directory}, found {found}"
    return found[0]


def project_files(folder: Path) -> list[Path]:
    """The files of `folder` that git tracks or would track (what a build takes: .gitignore'd ones are left out)."""
    listed = run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", folder])
    files = sorted({ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()})
    assert files, f"no files under {folder}"
    return files


def digests(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        return {name: hashlib.sha256(zf.read(name)).hexdigest() for name in zf.namelist()}


@dataclass(frozen=True)
class Dists:
    wheel: Path  # built from the checkout
    sdist: Path
    wheel_from_sdist: Path  # what pip builds when it installs the sdist
    created_in_checkout: frozenset[str]  # top-level entries the builds left in the source tree


@dataclass(frozen=True)
class Installed:
    venv: Path
    cwd: Path  # empty, outside the checkout
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    before = {p.name for p in ROOT.iterdir()}
    out = tmp_path_factory.mktemp("dist")
    build(ROOT, out, "--sdist", "--wheel")
    sdist = one(out, "*.tar.gz")
    unpacked = tmp_path_factory.mktemp("sdist")
    with tarfile.open(sdist) as tf:
        tf.extractall(unpacked, filter="data")
    rebuilt = tmp_path_factory.mktemp("from-sdist")
    build(one(unpacked, "*"), rebuilt, "--wheel")
    created = frozenset({p.name for p in ROOT.iterdir()} - before)
    return Dists(one(out, "*.whl"), sdist, one(rebuilt, "*.whl"), created)


@pytest.fixture(scope="module")
def installed(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    venv = tmp_path_factory.mktemp("venv")
    # A bare venv, filled by this interpreter's pip (seeding pip into it would double the time).
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "--disable-pip-version-check"]
    run([*pip, "install", "--quiet", "--no-compile", dists.wheel])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Installed(venv, tmp_path_factory.mktemp("elsewhere"), env)


def test_wheel_carries_every_package_file_the_definitions_and_the_license(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as zf:
        names = set(zf.namelist())
        (dist_info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        # Nothing but the three packages and the metadata lands in site-packages.
        assert {n.split("/")[0] for n in names} == {*CODE.values(), dist_info}
        # Every file of each code folder's package: each subpackage first (mcp_pd_agent._backends was missed
        # once), then py.typed, modules and the data files they read, byte for byte.
        expected = {
            f"{package}/{path.relative_to(ROOT / folder / package).as_posix()}": path
            for folder, package in CODE.items()
            for path in project_files(ROOT / folder / package)
        }
        subpackages = {name for name in expected if name.endswith("/__init__.py")}
        assert "mcp_pd_agent/_backends/__init__.py" in subpackages
        assert not subpackages - names, f"subpackages missing from the wheel: {sorted(subpackages - names)}"
        assert not expected.keys() - names, f"files missing from the wheel: {sorted(expected.keys() - names)}"
        for name, path in expected.items():
            assert zf.read(name) == path.read_bytes(), name
        # The reference server's enriched definitions.
        definitions = sorted(DEFINITIONS.glob("*.json"))
        assert len(definitions) == 20
        for path in definitions:
            assert zf.read(f"{SHIPPED_DEFINITIONS}/{path.name}") == path.read_bytes(), path.name
        assert zf.read(f"{dist_info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
        # The suite's requirement table: read from the one spec file, shipped inside the suite's package.
        shipped = zf.read("mcp_pd_conformance/spec/requirements.toml")
        assert shipped == (ROOT / "spec" / "requirements.toml").read_bytes()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata


def test_a_checkout_serves_its_own_definitions() -> None:
    # A checkout or editable install reads (and hot-reloads) the repository's files, never a shipped copy.
    assert DEFAULT_DESCRIPTIONS == ROOT / "tool_descriptions"
    assert not (ROOT / "server" / SHIPPED_DEFINITIONS).exists()


def test_license_is_the_apache_license_2_0() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert text.count("\n") > 190  # the full text, not a notice


def test_sdist_carries_the_license_and_builds_the_same_wheel(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tf:
        names = set(tf.getnames())
    base = dists.sdist.name.removesuffix(".tar.gz")
    assert f"{base}/LICENSE" in names
    assert {f"{base}/tool_descriptions/{p.name}" for p in DEFINITIONS.glob("*.json")} <= names
    assert digests(dists.wheel_from_sdist) == digests(dists.wheel)


def test_builds_leave_nothing_in_the_checkout(dists: Dists) -> None:
    assert not {n for n in dists.created_in_checkout if n in ("build", "dist") or n.endswith(".egg-info")}


def test_twine_accepts_both_distributions(dists: Dists) -> None:
    out = run([sys.executable, "-m", "twine", "check", "--strict", dists.wheel, dists.sdist])
    assert out.count("PASSED") == 2, out


def test_installed_packages_are_the_venvs_own(installed: Installed) -> None:
    probe = (
        "import json, mcp_pd, mcp_pd_conformance, mcp_pd_agent._backends, mcp_pd.reference as r;"
        "print(json.dumps([m.__file__ for m in (mcp_pd, mcp_pd_conformance, mcp_pd_agent._backends)]"
        " + [str(r.DEFAULT_DESCRIPTIONS)]))"
    )
    paths = [
        Path(p) for p in json.loads(run([installed.bin("python"), "-c", probe], cwd=installed.cwd, env=installed.env))
    ]
    for path in paths:
        assert path.is_relative_to(installed.venv), path
        assert not path.is_relative_to(ROOT), path
    assert paths[-1].name == "tool_descriptions" and len(list(paths[-1].glob("*.json"))) == 20


@pytest.mark.anyio
async def test_installed_server_serves_the_enriched_definitions(installed: Installed, tmp_path: Path) -> None:
    expected = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in DEFINITIONS.glob("*.json")}
    params = StdioServerParameters(
        command=installed.bin("mcp-pd"), args=["serve"], env=installed.env, cwd=installed.cwd
    )
    errlog = tmp_path / "serve.stderr"
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy", cache=None) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            read = await client.read_resource("resource:///tool_descriptions?tools=" + ",".join(sorted(expected)))
    assert set(expected) <= listed
    stderr = errlog.read_text(encoding="utf-8")
    assert f"mcp-pd: {len(expected)} tools, {len(expected)} JSON definitions" in stderr, stderr
    assert "problem" not in stderr and "orphan" not in stderr and "no descriptions directory" not in stderr, stderr
    text = getattr(read.contents[0], "text", None)
    assert isinstance(text, str), read
    served: dict[str, Any] = json.loads(text)
    for name, definition in expected.items():
        assert served[name]["examples"] == definition["examples"], name  # the enrichment only the files carry
        assert served[name]["error_guidance"] == definition["error_guidance"], name


def check(mcp_pd: Sequence[str], cwd: Path, env: dict[str, str] | None, report: Path) -> dict[str, Any]:
    """`mcp-pd check` against `mcp-pd serve`, both run as `mcp_pd` (a command line): its JSON report and output."""
    server = shlex.join([*mcp_pd, "serve"])
    argv = [*mcp_pd, "check", "--stdio", server, "--no-color", "--quiet", "--json", str(report)]
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert report.is_file(), proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    result["output"] = proc.stdout + proc.stderr
    return result


def warnings_of(report: dict[str, Any]) -> set[tuple[str, str | None, str]]:
    # The message counts: "no examples for: describe_tools; create_project" is a new warning, not the same one.
    return {(c["id"], c["era"], c["message"]) for c in report["checks"] if c["status"] == "WARNING"}


def test_installed_check_passes_with_no_warning_a_checkout_does_not_show(installed: Installed, tmp_path: Path) -> None:
    from_wheel = check([installed.bin("mcp-pd")], installed.cwd, installed.env, tmp_path / "wheel.json")
    assert from_wheel["summary"]["FAILURE"] == 0, from_wheel["output"]
    assert from_wheel["exit_code"] == 0, from_wheel["output"]
    if shown := warnings_of(from_wheel):
        # Only then is the checkout's own server, under the same suite, needed as the reference.
        from_checkout = check([sys.executable, "-m", "mcp_pd"], ROOT, None, tmp_path / "checkout.json")
        extra = shown - warnings_of(from_checkout)
        assert not extra, f"warnings only the installed wheel shows: {sorted(extra)}"


def test_installed_demo_runs_the_offline_planner(installed: Installed) -> None:
    # Two tasks (each starts its own server; tests/agent runs all 14 in the checkout), both through an error and
    # back: a call before the fetch and a name that does not exist; then the ledger, eager against progressive.
    out = run(
        [installed.bin("mcp-pd"), "demo", "--task", "call-first", "--task", "unknown-name"],
        cwd=installed.cwd,
        env=installed.env,
    )
    assert "offline planner" in out, out
    assert "2 of 2 task(s) passed." in out, out


# -- a plain install serves HTTP (issue 40.1) ---------------------------------------------------------------------
# The venv above holds the wheel and its dependencies only, no extra: what `pip install` of the project gives.


def _metrics_status(url: str) -> int:
    """The status of `GET /metrics` beside the `/mcp` endpoint `url` (loopback: no operator token needed)."""
    import httpx2

    return httpx2.get(url.removesuffix("/mcp") + "/metrics", timeout=30).status_code


def _check_url(installed: Installed, url: str, report: Path) -> dict[str, Any]:
    argv = [installed.bin("mcp-pd"), "check", "--url", url, "--no-color", "--quiet", "--json", str(report)]
    proc = subprocess.run(
        argv, cwd=installed.cwd, env=installed.env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert report.is_file(), proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert result["summary"]["FAILURE"] == 0 and result["exit_code"] == 0, proc.stdout + proc.stderr
    return result


def _proxy_argv(installed: Installed, *flags: str) -> list[str]:
    # The gateway in front of the installed reference server (a stdio upstream): nothing from npm or the checkout.
    upstream = f"tracker={shlex.join([installed.bin('mcp-pd'), 'serve'])}"
    return [installed.bin("mcp-pd"), "proxy", "--upstream-stdio", upstream, "--transport", "http", *flags, "--port"]


@pytest.mark.req("PDX-INSTALL-01")
@pytest.mark.parametrize("metrics", ["metrics", "no-metrics"])
def test_plain_install_serves_http_and_passes_the_suite(installed: Installed, metrics: str, tmp_path: Path) -> None:
    from pdtest import http_command

    flags = ["--no-metrics"] if metrics == "no-metrics" else []
    serve = [installed.bin("mcp-pd"), "serve", "--transport", "http", *flags, "--port"]
    with http_command(serve, env=installed.env, cwd=installed.cwd) as url:
        assert _metrics_status(url) == (404 if flags else 200)
        _check_url(installed, url, tmp_path / "serve.json")


@pytest.mark.req("PDX-INSTALL-01")
@pytest.mark.parametrize("metrics", ["metrics", "no-metrics"])
def test_plain_install_proxies_over_http_and_passes_the_suite(
    installed: Installed, metrics: str, tmp_path: Path
) -> None:
    from pdtest import http_command

    flags = ["--no-metrics"] if metrics == "no-metrics" else []
    with http_command(_proxy_argv(installed, *flags), env=installed.env, cwd=installed.cwd) as url:
        assert _metrics_status(url) == (404 if flags else 200)
        _check_url(installed, url, tmp_path / "proxy.json")
