"""The appliance as an operator runs it (docs/design.md "Deployment"): backups taken while a writer is busy and
restored, /health turning 503, settings that fail loudly, `jezero up` starting and stopping
web and worker together."""

import json
import os
import shutil
import signal
import sqlite3  # the bundled SQLite (jezero_site is loaded by pytest-django first)
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")

WRITER = """
import datetime, os, sys
import django
from jezero_site.cli import main  # noqa: F401  (bundled SQLite first)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")
django.setup()
from library.models import Item
n = 0
while not os.path.exists(sys.argv[1]) or n < 50:
    Item(key=f"w:{n}", source="w", title=f"written while backing up {n}", summary="busy writer",
         occurred_at=datetime.datetime.now(datetime.UTC)).save()
    n += 1
print(n)
"""


def _env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp / "data"), HOME=str(tmp))
    return env


def _jezero(env, *args, ok=True):
    proc = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=120)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_a_backup_taken_while_a_writer_is_busy_restores_to_a_clean_library(tmp_path):
    env = _env(tmp_path)
    _jezero(env, "init")
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(stop)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    db = tmp_path / "data" / "jezero.sqlite3"

    def items():
        with sqlite3.connect(db, timeout=10) as conn:
            return conn.execute("SELECT count(*) FROM items").fetchone()[0]

    wait_until(lambda: items() >= 20, timeout=60, what="the writer to commit 20 items")
    copy = tmp_path / "backup.sqlite3"
    out = json.loads(_jezero(env, "backup", str(copy), "--json").stdout)
    assert out["bytes"] > 0
    stop.touch()
    written, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert _jezero(env, "backup", str(copy), ok=False).returncode == 1  # never overwrites by accident

    # What the copy holds is a consistent prefix of what the writer committed: rows w:0 … w:k-1.
    with sqlite3.connect(copy) as conn:
        keys = sorted(int(k.split(":")[1]) for (k,) in conn.execute("SELECT key FROM items"))
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert keys == list(range(len(keys))) and 20 <= len(keys) <= int(written)
    # It holds token hashes and every item: readable by its owner only, and one file (no -wal
    # or -shm beside it, neither after writing nor after being read).
    assert oct(copy.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in tmp_path.glob("backup.sqlite3*")) == ["backup.sqlite3"]

    # Restore: stop, put the copy in place, start, check.
    restored = tmp_path / "restored"
    shutil.copytree(tmp_path / "data", restored, ignore=shutil.ignore_patterns("jezero.sqlite3*"))
    shutil.copyfile(copy, restored / "jezero.sqlite3")
    env_restored = {**env, "JEZERO_DATA_DIR": str(restored)}
    check = json.loads(_jezero(env_restored, "check", "--json").stdout)
    assert check["ok"] and check["items"] == len(keys) and check["indexed"] == len(keys)
    assert json.loads(_jezero(env_restored, "search", "written while backing", "--json").stdout)["results"]


def test_a_backup_never_overwrites_the_library_itself(tmp_path):
    env = _env(tmp_path)
    _jezero(env, "init")
    proc = _jezero(env, "backup", str(tmp_path / "data" / "jezero.sqlite3"), "--force", ok=False)
    assert proc.returncode == 1 and "is the library itself" in proc.stderr
    assert json.loads(_jezero(env, "check", "--json").stdout)["ok"]


def test_health_turns_503_when_the_database_cannot_be_read(tmp_path):
    env = _env(tmp_path)
    _jezero(env, "init")
    port = free_port()
    server = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/health"
        body = wait_for_health(f"http://127.0.0.1:{port}", server)
        assert body["database"] and body["fts"] and body["version"]
        assert body["worker_heartbeat_age"] is None  # no worker ran yet
        db = tmp_path / "data" / "jezero.sqlite3"
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        db.write_bytes(b"this is not a database" * 100)
        broken = httpx.get(url, timeout=5)
        assert broken.status_code == 503
        assert broken.json()["database"] is False
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("JEZERO_DEBUG", "maybe", "JEZERO_DEBUG='maybe' is not a boolean"),
    ("JEZERO_WORKERS", "many", "JEZERO_WORKERS='many' is not an integer"),
    ("JEZERO_MAX_UPLOAD_MB", "0", "JEZERO_MAX_UPLOAD_MB=0 is out of range"),
    ("JEZERO_SECRET_KEY_FILE", "/no/such/secret", "JEZERO_SECRET_KEY_FILE='/no/such/secret' cannot be read"),
    ("JEZERO_HTTPS", "yes please", "JEZERO_HTTPS='yes please' is not a boolean"),
])
def test_bad_environment_values_fail_loudly_naming_the_variable(tmp_path, variable, value, message):
    env = _env(tmp_path)
    _jezero(env, "init")
    proc = _jezero({**env, variable: value}, "timeline", ok=False)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_behind_tls_the_cookies_are_secure_and_hsts_is_on(tmp_path):
    env = {**_env(tmp_path), "JEZERO_HTTPS": "true", "JEZERO_ALLOWED_HOSTS": "jezero.example"}
    _jezero(env, "init")
    code = ("import sys; from jezero_site.cli import main; import django, os; "
            "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'jezero_site.settings'); django.setup(); "
            "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER, s.CSRF_TRUSTED_ORIGINS, s.DEBUG)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "True True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https') ['https://jezero.example'] False"


def test_up_runs_web_and_worker_and_ctrl_c_stops_both(tmp_path):
    env = _env(tmp_path)
    _jezero(env, "init")
    port = free_port()
    up = subprocess.Popen([str(JEZERO), "up", "--bind", f"127.0.0.1:{port}", "--workers", "1"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The web server answers, and the worker has beaten: both run.
        wait_for_health(f"http://127.0.0.1:{port}", up, timeout=30,
                        until=lambda body: body["worker_heartbeat_age"] is not None)
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=40)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
