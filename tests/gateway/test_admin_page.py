"""The gateway's operator page (issue 21.2) in a real browser: Debian's chromium driven through chromium-driver
(Selenium, told the driver's path: nothing is downloaded). The page loads; an upstream that dies and cannot restart
shows as failed, then as ready once it can; a catalog-mode search shows ranked hits and why."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from gateway.gwtest import gateway_params, stdio, write_config
from mcp import Client
from pdtest import http_command
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

PLAIN = Path(__file__).parent / "plain_server.py"
CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    if not (CHROMIUM.exists() and DRIVER.exists()):
        raise RuntimeError("the browser tests need Debian's chromium and chromium-driver (./dev test installs them)")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a driver or a browser
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1400",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium", ignore_errors=True)


def _until(check: Callable[[], bool], what: str, timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def _state(driver: webdriver.Chrome, upstream: str) -> str:
    # One script reads the cell: the page re-renders its table on every poll, so an element found in one round trip
    # can be stale by the next (find, then .text) and fail the test for a reason the user never sees.
    script = "const c = document.querySelector(arguments[0]); return c ? c.textContent.trim() : '';"
    return str(driver.execute_script(script, f'[data-upstream-state="{upstream}"]'))


def _body(driver: webdriver.Chrome) -> str:
    return str(driver.execute_script("return document.body.innerText;"))


def test_operator_page_shows_failure_recovery_and_search(tmp_path: Path, mark: str, browser: webdriver.Chrome) -> None:
    broken = tmp_path / "broken"  # while it exists, the upstream cannot start
    script = f'test -e "{broken}" && exit 1; exec "{sys.executable}" "{PLAIN}"'
    config = write_config(tmp_path / "servers.json", {"plain": stdio("sh", "-c", script, mark=mark)})
    params = gateway_params("--config", str(config), "--mode", "catalog", "--transport", "http", "--port")
    with http_command([params.command, *params.args]) as url:
        page = url.removesuffix("/mcp") + "/admin"
        browser.get(page)
        assert "mcp-pd gateway" in browser.title
        # Served while the upstream starts (issue 34): the page, refreshing itself, shows it once it is up.
        _until(lambda: _state(browser, "plain") == "ready", "the upstream to be shown ready")
        assert "echo" in _body(browser)  # the upstream's tools, listed lines

        async def crash() -> None:
            async with Client(url, mode="legacy", cache=None) as client:
                await client.call_tool("describe_tools", {"tools": ["crash"]})
                await client.call_tool("call_tool", {"name": "crash", "arguments": {}})

        broken.touch()
        anyio.run(crash)
        # Failed first as the crash's own exit, then as the restart that cannot start: wait for the latter.
        _until(
            lambda: _state(browser, "plain") == "failed" and "failed to start" in _body(browser),
            "the page to show the upstream failed to start again",
        )
        broken.unlink()
        _until(lambda: _state(browser, "plain") == "ready", "the page to show the upstream recovered")

        browser.get(page + "?q=echo+a+text+back")
        result = browser.find_element(By.ID, "search-result").text
        assert "ranking" in result
        rows = browser.find_elements(By.CSS_SELECTOR, "table tr")
        assert any("echo" in row.text for row in rows)
        shot = tmp_path / "operator-page.png"
        assert browser.save_screenshot(str(shot)) and shot.read_bytes().startswith(b"\x89PNG")
