"""Headless Chromium for the report's browser tests and benchmark: Debian's `chromium` and
`chromium-driver` driven by Selenium, which is pointed at /usr/bin/chromedriver so it downloads
nothing. `chromium_driver()` returns None (with the reason) where any piece is missing."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


def _binary(*names: str) -> str | None:
    for n in names:
        found = shutil.which(n) or (n if Path(n).is_file() else None)
        if found:
            return found
    return None


def bench_folder(name: str, out: Path | None) -> Path | None:
    """Where the browser benchmark `name` keeps its inputs and site (`out`, else a new temporary
    folder), or None after saying on stderr why no browser can run here."""
    why = missing()
    if why:
        print(f"{name}: {why}", file=sys.stderr)
        return None
    return out or Path(tempfile.mkdtemp(prefix=f"{name}_"))


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if not _binary("chromium", "/usr/bin/chromium"):
        return "chromium is not installed (apt-get install chromium chromium-driver)"
    if not _binary("chromedriver", "/usr/bin/chromedriver"):
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


def chromium_driver():
    """A Selenium Chrome driver on Debian's headless Chromium with a fresh profile folder."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = _binary("chromium", "/usr/bin/chromium")
    for f in FLAGS:
        opts.add_argument(f)
    profile = tempfile.mkdtemp(prefix="uds-chromium-")
    atexit.register(shutil.rmtree, profile, True)     # the profile folder goes when the process ends
    opts.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(service=Service(_binary("chromedriver", "/usr/bin/chromedriver")), options=opts)


@pytest.fixture(scope="module")
def driver():
    """One headless Chromium for a test module, closed after it."""
    d = chromium_driver()
    yield d
    d.quit()


def go(driver, url: str, ready: str) -> None:
    """Open url and wait until the CSS selector `ready` matches."""
    driver.get(url)
    try:
        wait_until(driver, "return !!document.querySelector(arguments[0])", ready, timeout=5.0, poll=0.05)
    except TimeoutError:
        raise AssertionError(f"{ready} never appeared on {url}") from None


def wait_until(driver, script: str, *args, timeout: float = 30.0, poll: float = 0.01) -> None:
    """Poll the JavaScript `script` (a `return` expression, given `args`) until it is truthy;
    TimeoutError after `timeout` seconds. The short default poll suits the timing benchmarks."""
    end = time.time() + timeout
    while not driver.execute_script(script, *args):
        if time.time() > end:
            raise TimeoutError(script)
        time.sleep(poll)


def texts(driver, css: str) -> list[str]:
    """The text content of every element matching `css`, in document order."""
    return driver.execute_script("return Array.from(document.querySelectorAll(arguments[0]))"
                                 ".map(e => e.textContent)", css)
