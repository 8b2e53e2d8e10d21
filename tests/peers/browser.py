"""Headless Chromium (Debian's chromium and chromium-driver) for the tests that load generated HTML."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # A missing browser or driver fails here: these tests never skip.
    assert Path("/usr/bin/chromium").is_file(), "Debian package chromium is not installed (deps/debian.txt)"
    assert Path("/usr/bin/chromedriver").is_file(), "Debian package chromium-driver is not installed"
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,900"):
        opts.add_argument(flag)
    profile = tempfile.TemporaryDirectory(prefix="amqgen-chromium-")
    opts.add_argument(f"--user-data-dir={profile.name}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        profile.cleanup()


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
