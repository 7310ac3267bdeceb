"""The container image, built and run for real: Podman (with `runc`) builds the Dockerfile in
Docker format, starts a web and a worker container on one named volume the way
deploy/compose.yaml does (an init as PID 1, no capabilities, no privilege gain, an agent's
folder read-only under /sources), waits for /health to show the worker's heartbeat, runs a
one-off verb in a third container on the same volume, checks the user and what it may read
and write, and stops them as Compose would.

The image's base, `python:3.11-slim-bookworm`, is NOT the real one: no registry but the
package registries can be reached here, so the test builds a stand-in from Debian's own
packages (`debootstrap --variant=minbase` of bookworm with python3, python3-venv,
python-is-python3 and ca-certificates; Python 3.11 at /usr/bin, where the real image has
/usr/local/bin) and imports it under that name into a Podman store of its own
(~/.cache/jezero-tests/podman), so a real image of that name elsewhere is never shadowed. The
stand-in and Podman's layer cache are kept there between runs; a fresh machine builds both
(about a minute more). The containers use the host's network (the only kind that works on
the machines this runs on), so the web server listens on a free port chosen per run.

`./test` installs podman, runc, catatonit (the init behind `--init`) and debootstrap. Without
them, or without root, the tests skip saying why; under CI (`CI` set) they fail instead, so a
missing install step cannot pass as a skip.
"""

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.e2e.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "python:3.11-slim-bookworm"
STAND_IN_LABEL = "org.jezero.test.stand-in"
IMAGE = "localhost/jezero:test"
DEBIAN_MIRROR = os.environ.get("JEZERO_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jezero-tests" / "podman"
# Podman's run-time state: somewhere cleared on reboot, as its default /run/libpod would be.
RUNTIME = Path(tempfile.gettempdir()) / f"jezero-tests-podman-{os.geteuid()}"
# What deploy/compose.yaml gives both services (init, cap_drop, security_opt), and the one
# network that works here.
COMPOSE_LIKE = ["--network", "host", "--init", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
# An agent's folder, mounted read-only under /sources as the compose file mounts ~/.claude/projects.
AGENT_FOLDER = ROOT / "tests" / "fixtures" / "claude_code"
SOURCES = ["-v", f"{AGENT_FOLDER}:/sources/claude-code:ro"]
# deploy/compose.yaml: the web service's stop_grace_period; the worker has Compose's default.
WEB_GRACE, WORKER_GRACE = 30, 10
# No ulimits of Podman's own: where the test runs may not raise them (here runc fails with
# "error setting rlimit type 7", the open-files limit), and the containers need none.
CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n"


def unavailable(reason):
    """Skip, naming what is missing, or fail under CI, where ./test must have installed it."""
    message = f"the container tests cannot run: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


class Podman:
    """The podman command with this test's store, runtime and configuration."""

    def __init__(self, conf):
        self.argv = ["podman", "--runtime", "runc", "--root", str(CACHE / "storage"),
                     "--runroot", str(RUNTIME / "run"), "--tmpdir", str(RUNTIME / "libpod")]
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}

    def __call__(self, *args, check=True, timeout=120, stdin=None):
        proc = subprocess.run([*self.argv, *args], env=self.env, stdin=stdin, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
        return proc

    def inspect(self, kind, name):
        """`podman KIND inspect NAME` as a dict (kind: image or container)."""
        return json.loads(self(kind, "inspect", name).stdout)[0]

    def logs(self, name):
        proc = self("logs", name, check=False)
        return f"--- podman logs {name}:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}"


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if missing:
        unavailable(f"{', '.join(missing)} not installed (./test installs them with apt-get)")
    if os.geteuid() != 0:
        unavailable("it runs Podman as root (rootful: no uid mapping) and debootstrap needs root; run ./test as root")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    podman = Podman(conf)
    info = podman("info", "--format", "{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}", check=False)
    if info.returncode != 0:
        unavailable(f"`podman info` fails here: {info.stderr.strip()[-500:]}")
    return podman


@pytest.fixture(scope="module")
def base_image(podman, tmp_path_factory):
    """A stand-in for python:3.11-slim-bookworm, made once per machine from Debian packages."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return BASE_IMAGE
    root = tmp_path_factory.mktemp("stand-in") / "rootfs"
    proc = subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,python-is-python3,ca-certificates",
         "bookworm", str(root), DEBIAN_MIRROR], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"debootstrap of bookworm from {DEBIAN_MIRROR} failed, so there is no stand-in for {BASE_IMAGE} "
                    f"(the real image cannot be pulled here; JEZERO_TEST_DEBIAN_MIRROR names another mirror):\n"
                    f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    for cache in ("var/lib/apt/lists", "var/cache/apt"):   # the slim image has neither
        shutil.rmtree(root / cache, ignore_errors=True)
    # The real image's environment and command (its PATH starts with /usr/local/bin, empty here).
    changes = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
               'CMD ["python3"]', f"LABEL {STAND_IN_LABEL}=debootstrap-bookworm-minbase"]
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    try:
        podman("import", *(arg for change in changes for arg in ("--change", change)), "-", BASE_IMAGE,
               stdin=tar.stdout, timeout=300)
    finally:
        tar.stdout.close()
        tar.wait(timeout=60)
    shutil.rmtree(root, ignore_errors=True)
    return BASE_IMAGE


@pytest.fixture(scope="module")
def image(podman, base_image):
    """The Dockerfile built as `podman build --format docker`, on the stand-in base, with no pull."""
    previous = podman("image", "inspect", "--format", "{{.Id}}", IMAGE, check=False).stdout.strip()
    # pip inside the build trusts what the host trusts (this machine reaches PyPI through a
    # proxy with its own certificate authority): only where those files exist.
    mounts = [arg for path in ("/etc/ssl/certs", "/etc/pip.conf") if Path(path).exists()
              for arg in ("-v", f"{path}:{path}:ro")]
    build = podman("build", "--format", "docker", "--pull=never", "--network", "host", *mounts, "-t", IMAGE,
                   str(ROOT), check=False, timeout=900)
    assert build.returncode == 0, (f"podman build on the stand-in {base_image} (not the real image) failed:\n"
                                   f"{build.stdout[-3000:]}{build.stderr[-3000:]}")
    current = podman("image", "inspect", "--format", "{{.Id}}", IMAGE).stdout.strip()
    if previous and previous != current:
        # The last run's image and the layers only it used: the store does not grow run after run.
        podman("rmi", previous, check=False)
    return IMAGE


@pytest.fixture(scope="module")
def deployment(podman, image):
    """Web, then worker, on a fresh named volume; yields their names, the volume and the URL.
    Whatever a test leaves, the containers and the volume are removed at the end."""
    token = secrets.token_hex(4)
    web, worker, volume = f"jezero-test-web-{token}", f"jezero-test-worker-{token}", f"jezero-test-data-{token}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    podman("volume", "create", volume)
    try:
        podman("run", "-d", "--name", web, *COMPOSE_LIKE, "-v", f"{volume}:/data", *SOURCES,
               "-e", f"JEZERO_BIND=127.0.0.1:{port}", "-e", "JEZERO_WORKERS=1", image, "web")
        wait_for_health(podman, web, url, "the web server's /health to answer 200")
        podman("run", "-d", "--name", worker, *COMPOSE_LIKE, "-v", f"{volume}:/data", *SOURCES, image, "worker")
        yield {"web": web, "worker": worker, "volume": volume, "url": url,
               "health": wait_for_health(podman, worker, url, "/health to report the worker's heartbeat",
                                         until=lambda body: body["worker_heartbeat_age"] is not None)}
    finally:
        podman("rm", "--force", "--time", "0", web, worker, check=False)
        podman("volume", "rm", "--force", volume, check=False)


def wait_for_health(podman, container, url, what, *, until=lambda body: True):
    """The /health body once it answers 200 and `until(body)`; fails at once, with the
    container's log, if `container` has exited instead."""

    def ready():
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                body = json.loads(response.read())
            if until(body):
                return body
        except (urllib.error.URLError, OSError):
            pass
        if not podman.inspect("container", container)["State"]["Running"]:
            raise AssertionError(f"{container} exited while waiting for {what}\n{podman.logs(container)}")
        return None

    try:
        return wait_until(ready, timeout=120, what=what, interval=0.5)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{podman.logs(container)}") from None


def test_the_image_built_in_docker_format_keeps_its_health_check_and_user(podman, image):
    """Podman ignores HEALTHCHECK unless it builds in Docker format: the probe and the user are in the image."""
    config = podman.inspect("image", image)
    assert config["User"] == "10001:10001"
    assert config["Healthcheck"]["Test"] == ["CMD", "python", "-I", "/app/deploy/healthcheck.py"]
    assert config["Healthcheck"]["StartPeriod"] > 0 and config["Healthcheck"]["Retries"] == 3


def test_web_and_worker_on_one_volume_report_the_workers_heartbeat(podman, deployment):
    """/health on the chosen port says ok and shows the worker's heartbeat; the image's own probe says healthy."""
    health = deployment["health"]
    assert health["status"] == "ok" and health["database"] and health["fts"]
    assert health["worker_heartbeat_age"] >= 0
    probe = podman("healthcheck", "run", deployment["web"], check=False)
    assert probe.returncode == 0, probe.stdout + probe.stderr + podman.logs(deployment["web"])
    assert "Traceback" not in podman.logs(deployment["worker"])


def test_a_one_off_verb_runs_in_a_third_container_on_the_same_volume(podman, image, deployment):
    """`docker compose run --rm web check`: the verb reads the library the web server prepared, and says ok."""
    proc = podman("run", "--rm", *COMPOSE_LIKE, "-v", f"{deployment['volume']}:/data", image, "check", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok")


def test_every_process_runs_as_uid_10001(podman, deployment):
    """No process of the web or the worker container, the init included, runs as root."""
    for name in (deployment["web"], deployment["worker"]):
        table = podman("top", name, "huser", "args").stdout.splitlines()[1:]
        assert table, f"no processes in {name}"
        assert {row.split()[0] for row in table} == {"10001"}, "\n".join(table)


def test_nothing_but_the_data_volume_and_the_temporary_folders_is_writable(podman, deployment):
    """In the running web container: the code, the virtualenv, /, /etc and the agent's folder refuse a write;
    /data takes it; and nothing else on the image's filesystem is writable but the temporary folders."""
    web = deployment["web"]
    refused = ("/", "/app", "/app/deploy", "/venv", "/venv/bin", "/etc", "/sources/claude-code")
    attempts = podman("exec", web, "sh", "-c",
                      f'for dir in {" ".join(refused)} /data; do '
                      'if touch "$dir/.jezero-write-test" 2>/dev/null; then rm "$dir/.jezero-write-test"; '
                      'echo "$dir writable"; else echo "$dir refused"; fi; done').stdout.splitlines()
    assert attempts == [f"{d} refused" for d in refused] + ["/data writable"]
    # -xdev: the image's own filesystem (and the volume, which may share its device), not
    # /proc or /dev; find exits 1 over the folders it may not read (/root), which is expected.
    found = podman("exec", web, "find", "/", "-xdev", "-writable", check=False).stdout.split()
    assert set(found) - {"/data"} <= {"/tmp", "/var/tmp", "/run/lock", "/var/lock"}, found
    assert "/tmp" in found


def test_the_agents_folder_mounted_read_only_is_readable_by_the_app_user(podman, deployment):
    """Every session file of the folder mounted at /sources/claude-code can be read by uid 10001, in both containers."""
    sessions = sorted(str(p.relative_to(AGENT_FOLDER)) for p in AGENT_FOLDER.rglob("*.jsonl"))
    assert sessions
    for name in (deployment["web"], deployment["worker"]):
        readable = podman("exec", "--workdir", "/sources/claude-code", name,
                          "find", ".", "-name", "*.jsonl", "-readable").stdout.split()
        assert sorted(path.removeprefix("./") for path in readable) == sessions


def test_web_and_worker_stop_cleanly_within_their_grace_periods(podman, deployment):
    """`docker compose stop`: SIGTERM through the init; both exit 0 before the grace period would have them killed."""
    for name, grace in ((deployment["worker"], WORKER_GRACE), (deployment["web"], WEB_GRACE)):
        stop = podman("stop", "--time", str(grace), name, timeout=grace + 60)
        assert "SIGKILL" not in stop.stderr, stop.stderr
        state = podman.inspect("container", name)["State"]
        assert (state["Status"], state["ExitCode"]) == ("exited", 0), podman.logs(name)
    assert "Shutting down: Master" in podman.logs(deployment["web"])
    assert "Consumer exiting" in podman.logs(deployment["worker"])
