"""The first admin as a person makes it: `jezero init` refusing a weak JEZERO_ADMIN_PASSWORD
(or a bad admin name, or a bad setting) and leaving nothing behind, `jezero init --setup-page`
(what the container runs) printing a one-time code and no password, and that code used on
/setup/ in Chromium against a real `jezero serve`, ending logged in. The setup page's screenshot goes to docs/img/setup.png."""

import os
import re
import sqlite3  # the bundled SQLite (jezero_site is loaded by pytest-django first)
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.browser import REPO, Site, chromium_missing, launch

JEZERO = Path(sys.executable).with_name("jezero")
CODE_LINE = re.compile(r"^admin user: none yet: open (\S+) and enter the setup code ([A-Z2-9]{5}-[A-Z2-9]{5}) ", re.M)
GOOD_PASSWORD = "slate-harbour-quince-42"


@pytest.fixture
def run(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))

    def run(*args, **extra):
        return subprocess.run([str(JEZERO), *args], env={**env, **extra}, capture_output=True, text=True, timeout=120)

    run.data = tmp_path / "data"
    return run


def superusers(database):
    with sqlite3.connect(database) as db:
        return [name for (name,) in db.execute("SELECT username FROM auth_user WHERE is_superuser")]


def test_a_weak_admin_password_stops_init_before_the_database_saying_what_is_wrong(run, tmp_path):
    proc = run("init", JEZERO_ADMIN_PASSWORD="admin")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("jezero init: JEZERO_ADMIN_PASSWORD is refused: ")
    assert "too short" in proc.stderr and "too common" in proc.stderr and "Nothing was kept" in proc.stderr
    assert not run.data.exists()   # no database, config or secret key left behind

    secret = tmp_path / "admin_password"
    secret.write_text("31415926535\n")  # a Docker secret, read through JEZERO_ADMIN_PASSWORD_FILE
    proc = run("init", JEZERO_ADMIN_PASSWORD_FILE=str(secret))
    assert proc.returncode == 1 and "entirely numeric" in proc.stderr

    proc = run("init", JEZERO_ADMIN_PASSWORD=GOOD_PASSWORD)
    assert proc.returncode == 0, proc.stderr
    assert "admin user: created 'admin', password from JEZERO_ADMIN_PASSWORD" in proc.stdout
    assert superusers(run.data / "jezero.sqlite3") == ["admin"]
    # Once an admin exists the variable is not used, so an old weak value never stops a restart.
    again = run("init", JEZERO_ADMIN_PASSWORD="admin")
    assert again.returncode == 0 and "admin user: skipped (one exists)" in again.stdout


def files(folder):
    """{path relative to `folder`: its bytes} for every file under `folder`."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.mark.parametrize("refused, why", [
    ({"JEZERO_ADMIN_PASSWORD": "123"}, "JEZERO_ADMIN_PASSWORD is refused: This password is too short."),
    ({"JEZERO_ADMIN_PASSWORD": "Jezero2026"}, "the product's name (jezero) with only digits or symbols added"),
    ({"JEZERO_ADMIN_PASSWORD": "admin12345"}, "your user name with only digits or symbols added"),
    ({"args": ("--admin", "bad name!")}, "--admin 'bad name!' is refused: Enter a valid username."),
    ({"JEZERO_WORKERS": "many"}, "JEZERO_WORKERS"),
])
def test_a_refused_init_leaves_nothing_behind(run, tmp_path, refused, why):
    """A missing data folder (and its missing parents) is not there after a refused init, and
    an empty one (a container's volume, with the lock file of its entrypoint) holds only what
    it held; the refusal is one line saying why."""
    refused = dict(refused)
    args = refused.pop("args", ())
    nested = tmp_path / "srv" / "jezero" / "data"
    proc = run("init", *args, JEZERO_DATA_DIR=str(nested), **refused)
    assert proc.returncode == 1 and why in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "srv").exists()

    run.data.mkdir()
    (run.data / ".init.lock").write_text("")
    proc = run("init", *args, **refused)
    assert proc.returncode == 1 and why in proc.stderr
    assert files(run.data) == {".init.lock": b""} and [p.name for p in run.data.iterdir()] == [".init.lock"]


def test_a_refused_init_of_an_existing_library_leaves_it_byte_identical(run):
    """A library without an admin yet (made with --setup-page), then init with a weak
    JEZERO_ADMIN_PASSWORD: refused, and every file of the data folder is as it was."""
    made = run("init", "--setup-page")
    assert made.returncode == 0, made.stderr
    before = files(run.data)
    assert {"jezero.sqlite3", "huey.sqlite3", "jezero.toml", "secret_key", "setup-codes"} <= set(before)
    for weak in ("Summer2026!", "admin-2026"):
        proc = run("init", JEZERO_ADMIN_PASSWORD=weak)
        assert proc.returncode == 1 and "JEZERO_ADMIN_PASSWORD is refused" in proc.stderr
        assert files(run.data) == before
    assert superusers(run.data / "jezero.sqlite3") == []


def test_the_setup_page_mode_prints_a_one_time_code_and_no_password(run):
    first = run("init", "--setup-page")
    assert first.returncode == 0, first.stderr
    url, code = CODE_LINE.search(first.stdout).groups()
    assert url == "http://localhost:8000/setup/"
    assert "password" not in first.stdout.lower() and code not in first.stderr
    database = run.data / "jezero.sqlite3"
    assert superusers(database) == []
    # Stored only hashed: the code is in no file of the data folder.
    for path in run.data.rglob("*"):
        if path.is_file():
            assert code.encode() not in path.read_bytes() and code.replace("-", "").encode() not in path.read_bytes(), path
    assert oct((run.data / "setup-codes").stat().st_mode & 0o777) == "0o600"

    second = run("init", "--setup-page")
    assert CODE_LINE.search(second.stdout).group(2) != code  # a restarted container shows a fresh code

    behind_tls = run("init", "--setup-page", JEZERO_HTTPS="true", JEZERO_ALLOWED_HOSTS="jezero.example,localhost")
    assert CODE_LINE.search(behind_tls.stdout).group(1) == "https://jezero.example/setup/"

    given = run("init", "--setup-page", JEZERO_ADMIN_PASSWORD=GOOD_PASSWORD)  # the environment wins
    assert "admin user: created 'admin', password from JEZERO_ADMIN_PASSWORD" in given.stdout
    assert superusers(database) == ["admin"] and not (run.data / "setup-codes").exists()
    assert "admin user: skipped (one exists)" in run("init", "--setup-page").stdout


_NO_BROWSER = chromium_missing()


@pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")
def test_a_fresh_server_leads_the_first_visitor_through_setup_to_a_logged_in_home(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
    expect = sync_api.expect
    site = Site(tmp_path)
    code = CODE_LINE.search(site.jezero("init", "--setup-page")).group(2)
    site.start()
    try:
        with sync_api.sync_playwright() as playwright:
            browser = launch(playwright)
            context = browser.new_context(base_url=site.url, viewport={"width": 900, "height": 640})
            page = context.new_page()
            page.goto("/timeline/")
            expect(page).to_have_url(f"{site.url}/setup/")
            expect(page.get_by_role("heading", name="Set up Jezero")).to_be_visible()
            (REPO / "docs" / "img").mkdir(exist_ok=True)
            page.screenshot(path=str(REPO / "docs" / "img" / "setup.png"), full_page=True)

            page.get_by_label("Setup code").fill(code.lower())  # as a person might type it
            page.get_by_label("User name").fill("maria")
            page.get_by_label("Password", exact=True).fill("password1")
            page.get_by_label("Password again").fill("password1")
            page.get_by_role("button", name="Create the admin and log in").click()
            expect(page.locator("#password-errors")).to_contain_text("This password is too common.")
            expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-invalid", "true")

            page.get_by_label("Password", exact=True).fill(GOOD_PASSWORD)
            page.get_by_label("Password again").fill(GOOD_PASSWORD)
            page.get_by_role("button", name="Create the admin and log in").click()
            expect(page).to_have_url(f"{site.url}/")
            expect(page.get_by_role("button", name="Log out maria")).to_be_visible()
            expect(page.get_by_role("status")).to_contain_text("Welcome, maria")
            expect(page.get_by_role("link", name="Clients")).to_be_visible()  # an admin's menu

            assert page.goto("/setup/").status == 404
            anonymous = browser.new_context(base_url=site.url).new_page()
            assert anonymous.goto("/setup/").status == 404
            anonymous.goto("/")
            expect(anonymous).to_have_url(re.compile(r"/login/"))
            browser.close()
    finally:
        site.stop()
    logs = site.log("serve") + site.log("worker")
    assert '"POST /setup/ HTTP/1.1" 302' in logs  # the access log saw the setup, and nothing of what was typed
    assert code not in logs and code.lower() not in logs and GOOD_PASSWORD not in logs
