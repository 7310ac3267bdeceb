"""Helpers for the browser tests: a real Jezero (`jezero serve` plus `jezero worker`) in a
throw-away data folder, and Debian's headless Chromium driven by Playwright.

Playwright cannot download its own browsers here, so it drives `/usr/bin/chromium`, which
`./test` installs (`apt-get install chromium`). Without it the browser tests skip and say so.
"""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import free_port, wait_for_health

REPO = Path(__file__).resolve().parents[2]
JEZERO = Path(sys.executable).with_name("jezero")
CHROMIUM = Path(os.environ.get("JEZERO_TEST_CHROMIUM", "/usr/bin/chromium"))
# Headless and quiet: no sandbox (CI runs as root in a container), no GPU, no calls home.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"


def chromium_missing():
    """Why the browser tests cannot run, or None when they can."""
    if not CHROMIUM.exists():
        return (f"{CHROMIUM} is missing: `./test` installs it (apt-get install chromium), "
                "or install Debian's chromium package yourself")
    return None


def launch(playwright):
    """A headless Chromium from the system, not one downloaded by Playwright."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


@contextlib.contextmanager
def staff_page(url, password, *, viewport=None, user="admin"):
    """A Chromium page logged in to the site at `url` as staff; on the way out, fails the test
    if any JavaScript error happened on the page meanwhile."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(base_url=url, viewport=viewport or {"width": 1100, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/login/")
        page.get_by_label("User name").fill(user)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        sync_api.expect(page.get_by_role("button", name=f"Log out {user}")).to_be_visible()
        yield page
        context.close()
        browser.close()
        assert not errors, f"JavaScript errors on the page: {errors}"


def screenshot(page, name, *, full_page=True):
    """Save what the page looks like to test-artifacts/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


DOCS_IMAGES = REPO / "docs" / "img"


def doc_screenshot(page, name):
    """Save the visible part of the page as docs/img/<name>.png, for docs/operations.md (the
    viewport only, so the files stay small), and a copy beside the other screenshots."""
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMAGES / f"{name}.png"))
    screenshot(page, f"docs-{name}", full_page=False)


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


class Site:
    """A Jezero data folder under `tmp` and the processes serving it.

    `jezero(*args)` runs the CLI against the folder and returns its output; `start()` starts
    the web server and the worker and waits for /health; `stop()` ends both."""

    def __init__(self, tmp, **env):
        self.tmp = Path(tmp)
        self.data = self.tmp / "data"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
        self.env.update(JEZERO_DATA_DIR=str(self.data), HOME=str(self.tmp),
                        JEZERO_ALLOWED_HOSTS="127.0.0.1,localhost", **env)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes = []

    def jezero(self, *args):
        proc = subprocess.run([str(JEZERO), *args], env=self.env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"jezero {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def _spawn(self, name, *args):
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen([str(JEZERO), *args], env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.processes.append(proc)
        return proc

    def log(self, name):
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, timeout=30):
        server = self._spawn("serve", "serve", "--bind", f"127.0.0.1:{self.port}", "--workers", "1")
        self._spawn("worker", "worker")
        try:
            wait_for_health(self.url, server, timeout=timeout)
        except AssertionError as failed:
            self.stop()
            raise RuntimeError(f"the server did not start ({failed}):\n{self.log('serve')[-3000:]}") from None
        return self

    def stop(self):
        for proc in self.processes:
            proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.processes = []
