"""Playwright against Debian's chromium and pytest-django's live server.

Skips with a reason when chromium or playwright is missing, unless QIWEI_REQUIRE_BROWSER=1,
where a missing browser is a failure. A failing test leaves a screenshot in test-artifacts/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def _missing_browser() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} 不存在：apt-get install chromium (Debian's chromium is required)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "未安装 playwright 包：pip install -e '.[dev]' (the playwright package is required)"
    return None


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = _missing_browser()
    if reason:
        if os.environ.get("QIWEI_REQUIRE_BROWSER") == "1":
            pytest.fail(f"QIWEI_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make
    # between browser steps are still plain synchronous code. Only while the browser runs.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser_context(browser: Any, live_server: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1366, "height": 820}, locale="zh-CN", timezone_id="Asia/Shanghai")
    context.set_default_timeout(10_000)

    # No network except the live server on loopback.
    def only_loopback(route: Any) -> None:
        if route.request.url.startswith(live_server.url):
            route.fallback()
        else:
            route.abort()

    context.route("**/*", only_loopback)
    yield context
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]
        for index, page in enumerate(context.pages):
            try:
                page.screenshot(path=str(ARTIFACTS / f"{name}-{index}.png"), full_page=True)
            except Exception as exc:  # a failed screenshot must not hide the real failure
                print(f"screenshot failed: {exc}")
    context.close()


@pytest.fixture
def page(browser_context: Any) -> Any:
    return browser_context.new_page()


def login(context: Any, live_server: Any, user: Any) -> None:
    """Give the browser a session for `user` without going through the login form."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}])
