"""deploy/entrypoint.sh as the container runs it, outside a container: real processes, a real
data folder, the role as first argument. Two containers preparing one volume at once migrate
it exactly once; `web` serves /health and stops on SIGTERM, and so does `worker`; any other
verb runs as is, and an unknown one says so."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.e2e.conftest import free_port, wait_for_health, wait_for_heartbeat

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"
PROBE = ROOT / "deploy" / "healthcheck.py"


def environment(home, **overrides):
    """A container-like environment: no inherited JEZERO_*, jezero on PATH, the data folder in `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(home / "data"), HOME=str(home),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")]))
    env.update(overrides)
    return env


def entrypoint(*args, env, timeout=60):
    return subprocess.run([str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A data folder the `prepare` role has set up once, shared by the tests that only use it."""
    home = tmp_path_factory.mktemp("prepared")
    env = environment(home)
    proc = entrypoint("prepare", env=env)
    assert proc.returncode == 0, proc.stderr
    return env


def test_two_containers_starting_together_migrate_the_volume_once(tmp_path):
    """Both prepares succeed; the lock makes one apply the migrations and the other find them done."""
    env = environment(tmp_path)
    runs = [subprocess.Popen([str(ENTRYPOINT), "prepare"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    results = [run.communicate(timeout=90) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in results]
    out = "".join(stdout for stdout, _ in results)
    assert out.count("migrations: applied") == 1
    assert out.count("migrations: skipped (up to date)") == 1
    assert out.count("secret key") == 2
    # No JEZERO_ADMIN_PASSWORD: no admin and no password in the log, a setup code from each instead.
    assert "admin user: created" not in out and "password" not in out
    assert out.count("admin user: none yet: open http://localhost:8000/setup/ and enter the setup code ") == 2
    assert (tmp_path / "data" / ".init.lock").exists()


def test_any_other_verb_runs_as_is_on_the_prepared_volume(prepared):
    """`docker run IMAGE check` is `jezero check`: no prepare, no server."""
    proc = entrypoint("check", env=prepared)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")


def test_an_unknown_verb_fails_naming_it(prepared):
    """A typo in `docker run IMAGE verb` exits non-zero and says which word was not understood."""
    proc = entrypoint("serv", env=prepared)
    assert proc.returncode == 2
    assert "unknown command 'serv'" in proc.stderr and "Traceback" not in proc.stderr


def test_web_serves_health_passes_the_probe_and_stops_on_sigterm(prepared):
    """The `web` role answers /health 200 where JEZERO_BIND says, the image's probe agrees, and SIGTERM stops it cleanly."""
    port = free_port()
    env = {**prepared, "JEZERO_BIND": f"127.0.0.1:{port}", "JEZERO_WORKERS": "1"}
    web = subprocess.Popen([str(ENTRYPOINT), "web"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        wait_for_health(f"http://127.0.0.1:{port}", web)
        probe = subprocess.run([sys.executable, "-I", str(PROBE)], env=env, capture_output=True, text=True,
                               timeout=30)
        assert probe.returncode == 0, probe.stderr
    finally:
        web.send_signal(signal.SIGTERM)
        out, err = web.communicate(timeout=30)
    assert web.returncode == 0, err
    assert "migrations: skipped (up to date)" in out
    assert f"Jezero at http://127.0.0.1:{port}/" in out
    down = subprocess.run([sys.executable, "-I", str(PROBE)], env=env, capture_output=True, text=True, timeout=30)
    assert down.returncode == 1 and down.stderr.startswith("unhealthy: ")


def test_the_worker_role_starts_working_and_stops_on_sigterm(prepared):
    """`worker` prepares, then runs the consumer: its heartbeat lands in the database; SIGTERM ends it."""
    worker = subprocess.Popen([str(ENTRYPOINT), "worker"], env=prepared, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    database = Path(prepared["JEZERO_DATA_DIR"]) / "jezero.sqlite3"
    try:
        beat = wait_for_heartbeat(database, worker)
    except AssertionError:
        beat = None   # the worker's stderr below says why
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    assert beat, err
    assert worker.returncode in (0, -signal.SIGTERM), err
    assert "migrations: skipped (up to date)" in out
    assert "Traceback" not in err


def test_a_data_folder_the_user_cannot_write_stops_with_a_hint():
    """A bind-mounted host folder not given to the image's user: one clear line, no traceback."""
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        data = scratch / "data"
        data.mkdir()
        script = scratch / "entrypoint.sh"
        shutil.copy2(ENTRYPOINT, script)
        env = environment(scratch)
        if os.geteuid() == 0:
            # root may write anywhere: run as nobody, over a world-readable copy of the script.
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv (util-linux) to drop to another user")
            scratch.chmod(0o755)
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(script), "prepare"]
        else:
            data.chmod(0o555)
            command = [str(script), "prepare"]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
        data.chmod(0o755)
    assert proc.returncode == 1
    assert f"the data folder {data} is not writable by uid" in proc.stderr
    assert "chown" in proc.stderr and "Traceback" not in proc.stderr
