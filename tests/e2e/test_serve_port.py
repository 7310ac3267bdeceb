"""`jezero serve` and `jezero up` refuse to start on an address something already serves
(docs/design.md "Serving"): each gunicorn worker listens with SO_REUSEPORT, so without this check a second
Jezero on the same port started silently and the kernel shared the traffic between two
libraries."""

import socket
import subprocess
import urllib.request

from tests.e2e.conftest import JEZERO, free_port, serving, wait_for_health

REFUSAL = "is already in use (another Jezero or another server); stop it or set JEZERO_BIND"


def start(setup, verb, bind):
    """Run `jezero <verb> --bind <bind>` in the library of `setup`; it must end by itself."""
    return subprocess.run([str(JEZERO), verb, "--bind", bind, "--workers", "1"], env=setup.env, capture_output=True,
                          text=True, timeout=60)


def test_a_second_jezero_on_a_served_port_refuses_and_the_first_keeps_serving(setup):
    """Both `serve` and `up` say in one line that the address is taken and exit 1; the running
    server still answers."""
    with serving(setup.env, workers=2) as url:
        bind = url.removeprefix("http://")
        for verb in ("serve", "up"):
            second = start(setup, verb, bind)
            assert second.returncode == 1, second.stdout + second.stderr
            assert second.stderr.strip() == f"jezero {verb}: {bind} {REFUSAL} (or --bind) to a free address"
            assert "Jezero at" not in second.stdout
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            assert response.status == 200


def test_a_port_another_program_listens_on_is_refused(setup):
    """A plain listening socket (another server, no SO_REUSEPORT) on the port, on loopback or
    on every address, makes `jezero serve` refuse at once."""
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as other:
            other.bind((host, 0))
            other.listen()
            port = other.getsockname()[1]
            refused = start(setup, "serve", f"127.0.0.1:{port}")
            assert refused.returncode == 1 and REFUSAL in refused.stderr


def test_a_port_just_left_by_a_stopped_server_is_served_again(setup):
    """A restart right after a stop comes up on the same port: the connections the stopped
    server leaves in TIME_WAIT hold no port."""
    bind = f"127.0.0.1:{free_port()}"
    for _ in range(2):
        server = subprocess.Popen([str(JEZERO), "serve", "--bind", bind, "--workers", "1"], env=setup.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_health(f"http://{bind}", server)
            for _ in range(3):
                urllib.request.urlopen(f"http://{bind}/health", timeout=5).close()
        finally:
            server.terminate()
            server.wait(timeout=20)
