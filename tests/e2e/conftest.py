"""Helpers the end-to-end tests share: a free port on loopback, and waits for a started
Jezero to be up (`/health` answering, the worker's heartbeat in the database) that go on
the moment it is, and fail at once if the process died instead."""

import contextlib
import json
import os
import socket
import sqlite3  # the bundled SQLite (jezero_site is loaded by pytest-django first)
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import wait_until


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


JEZERO = Path(sys.executable).with_name("jezero")


@contextlib.contextmanager
def serving(env, workers=2):
    """`jezero serve` on a free loopback port with `env`, up (its /health answering); yields
    its base URL, stops it afterwards."""
    port = free_port()
    proc = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
    except AssertionError:
        proc.kill()
        raise
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _alive(process):
    if process.poll() is not None:
        raise AssertionError(f"{' '.join(map(str, process.args))} exited with {process.returncode}")


def wait_for_health(url, process, *, timeout=30, until=lambda body: True):
    """The JSON body of `url`/health once it answers 200 and `until(body)` holds. Fails when
    `process` (the server) exits first or `timeout` seconds pass."""

    def healthy():
        _alive(process)
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                body = json.loads(response.read())
        except (urllib.error.URLError, OSError):   # not listening yet (an HTTPError is an OSError)
            return None
        return body if until(body) else None

    return wait_until(healthy, timeout=timeout, what=f"{url}/health to answer 200")


def heartbeat(database):
    """The worker's last heartbeat recorded in `database`, or None."""
    with sqlite3.connect(database, timeout=10) as db:
        row = db.execute("SELECT value FROM store_state WHERE key = 'worker_heartbeat'").fetchone()
    return row and row[0]


def wait_for_heartbeat(database, process, *, timeout=30):
    """The worker's first heartbeat, once `process` has written it to `database`."""
    return wait_until(lambda: _alive(process) or heartbeat(database), timeout=timeout,
                      what="the worker's heartbeat")


@pytest.fixture
def setup(tmp_path):
    """A data folder made by `jezero init` with the `agent-laptop` connector over an empty
    Claude Code projects folder; call it with CLI arguments to run `jezero` there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path / "home"))
    projects = tmp_path / "projects" / "-src-experiments"
    projects.mkdir(parents=True)

    def run(*args, ok=True, timeout=120):
        proc = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=timeout)
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    def configure(extra=""):
        (tmp_path / "data" / "jezero.toml").write_text(
            f'[[connectors]]\nname = "agent-laptop"\ntype = "claude_code"\npath = "{projects.parent}"\n{extra}')

    run("init")
    configure()
    run.env, run.projects, run.configure, run.data, run.tmp = env, projects, configure, tmp_path / "data", tmp_path
    return run


def uploading_library(tmp_path, home=None):
    """A data folder made by `jezero init` (HOME `home`, default `tmp_path`) with the client
    `laptop`, which reads every source and uploads to uploads-laptop: (env, jezero, token),
    where `jezero(*args)` runs the CLI there and returns the finished process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(home or tmp_path), JEZERO_ALLOWED_HOSTS="127.0.0.1")

    def jezero(*args):
        return subprocess.run([str(JEZERO), *args], env=env, check=True, capture_output=True, text=True, timeout=120)

    jezero("init")
    token = json.loads(jezero("client", "add", "laptop", "--sources", "*", "--scopes", "read,upload",
                              "--json").stdout)["token"]
    return env, jezero, token


@contextlib.contextmanager
def worker_running(env, jezero):
    """`jezero worker` up (its heartbeat seen) with its first scheduled runs behind it — `jezero
    run` done, so that the next scheduled run is 15 minutes on; stopped afterwards."""
    worker = subprocess.Popen([str(JEZERO), "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_heartbeat(Path(env["JEZERO_DATA_DIR"]) / "jezero.sqlite3", worker)
        jezero("run")
        yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=30)
