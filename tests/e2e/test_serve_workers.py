"""Keep-alive connections spread over the server's workers (docs/design.md "Serving"): agents and devices keep
one connection each, and with a single listening socket the first worker to wake accepted
every pending connection (asyncio accepts a whole batch), so one process served them all
while the other idled. `jezero serve` gives each worker its own listening socket
(SO_REUSEPORT) and the kernel spreads the connections."""

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")
CONNECTIONS = 16


def _children(pid):
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def _socket_inodes(pid):
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _established(port):
    """Inodes of the server side of the established TCP connections to `port`."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], int(fields[9])
        if int(local.split(":")[1], 16) == port and state == "01":
            inodes.add(inode)
    return inodes


def test_keep_alive_connections_are_spread_over_the_workers(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path), JEZERO_ALLOWED_HOSTS="127.0.0.1")
    subprocess.run([str(JEZERO), "init"], env=env, capture_output=True, check=True, timeout=60)
    port = free_port()
    proc = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}", "--workers", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    clients = []
    try:
        wait_for_health(f"http://127.0.0.1:{port}", proc)
        wait_until(lambda: len(_children(proc.pid)) == 2, timeout=20, what="two workers")
        # Every client connects before any sends a request, as agents starting together do.
        clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(CONNECTIONS)]
        for client in clients:
            client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
        for client in clients:
            assert client.recv(65536).startswith(b"HTTP/1.1 200")
        held = _established(port)
        per_worker = [len(_socket_inodes(worker) & held) for worker in _children(proc.pid)]
        assert sum(per_worker) == CONNECTIONS
        assert min(per_worker) >= 2, per_worker   # all on one worker before
    finally:
        for client in clients:
            client.close()
        proc.terminate()
        proc.wait(timeout=20)


def test_by_default_two_server_processes_a_core_from_two_to_eight(tmp_path):
    """Without --workers, `jezero serve` starts two processes a core the machine gives it
    (bench/RESULTS-serve.md: with one a core, the kernel's uneven spreading of kept-alive
    connections left a core idle while the other's process was saturated); JEZERO_WORKERS
    still decides when set."""
    from jezero_site.settings import server_processes, usable_cpus

    assert [server_processes(cpus) for cpus in (1, 2, 3, 4, 16)] == [2, 4, 6, 8, 8]
    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path), JEZERO_ALLOWED_HOSTS="127.0.0.1")
    subprocess.run([str(JEZERO), "init"], env=env, capture_output=True, check=True, timeout=60)
    for extra, expected in (({}, server_processes(usable_cpus())), ({"JEZERO_WORKERS": "3"}, 3)):
        port = free_port()
        proc = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}"], env={**env, **extra},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_health(f"http://127.0.0.1:{port}", proc)
            wait_until(lambda: len(_children(proc.pid)) == expected, timeout=30, what=f"{expected} workers")  # noqa: B023
        finally:
            proc.terminate()
            proc.wait(timeout=20)
