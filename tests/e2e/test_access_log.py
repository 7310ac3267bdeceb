"""The access log of a real `jezero serve` (gunicorn, jezero_site.accesslog): one line per
request that a client cannot forge, and no secret in it — no query string (uploads carry
`git_remote` in theirs, which may hold `https://user:token@host/…`), no user name
of a Basic header, no bearer token, no referrer (docs/design.md "The access log")."""

import base64
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")
# One access line: address, two dashes, time, "method path protocol", status, size, "agent", duration.
ACCESS_LINE = re.compile(r'^127\.0\.0\.1 - - \[[^\]]+\] "(?P<request>(?:[^"\\]|\\.)*)" (?P<status>\d{3}) (?:\d+|-) '
                         r'"(?P<agent>(?:[^"\\]|\\.)*)" \d+ms$')


@contextlib.contextmanager
def served(tmp_path):
    """A library made by `jezero init` with a client that may upload and read, served by
    `jezero serve` (one worker); yields (base URL, the client's token, the access log path,
    the error log path). The access log is gunicorn's stdout, its error log and Django's
    stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path), JEZERO_ALLOWED_HOSTS="127.0.0.1")

    def jezero(*args):
        done = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    jezero("init")
    token = json.loads(jezero("client", "add", "laptop", "--sources", "*", "--scopes", "upload,read",
                              "--upload-source", "uploads-laptop", "--json"))["token"]
    access_log, error_log = tmp_path / "access.log", tmp_path / "error.log"
    port = free_port()
    with open(access_log, "w") as out, open(error_log, "w") as err:
        proc = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"], env=env,
                                stdout=out, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
        yield url, token, access_log, error_log
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def raw_request(url, head):
    """Send `head` (a request line and headers, latin-1, no blank line) as it is; the status."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"{head}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def access_lines(path):
    return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("Jezero at ")]


def test_an_upload_with_a_token_in_its_query_is_logged_without_the_query(tmp_path):
    """The request is logged (method, path, status), its query string is not: neither the
    token inside `git_remote` nor a search's words reach the log."""
    secret = "gh" + "p_" + "Qm4vXr8TzK2LwP9sNd3YhB6jFc1GaE5uRo7i"
    with served(tmp_path) as (url, token, access_log, _error_log):
        params = {"agent": "claude_code", "session_id": "s1", "cwd": "/home/ana/src/shop",
                  "git_remote": f"https://ana:{secret}@github.com/acme/shop.git", "git_branch": "main"}
        upload = httpx.post(f"{url}/api/v1/sessions", params=params, content=b"not a transcript\n",
                            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
                            timeout=10)
        assert upload.status_code == 422  # parsed and refused: what matters here is the log line
        search = httpx.get(f"{url}/api/v1/search", params={"q": "zanzibar-passphrase"},
                           headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert search.status_code == 200
        wait_until(lambda: access_log.read_text().count("/api/v1/") >= 2, timeout=10, what="two access log lines")
    logged = access_log.read_text()
    assert '"POST /api/v1/sessions HTTP/1.1" 422' in logged and '"GET /api/v1/search HTTP/1.1" 200' in logged
    assert secret not in logged and "git_remote" not in logged and "github.com" not in logged
    assert "zanzibar" not in logged and "?" not in logged


def test_a_request_cannot_write_a_second_line_into_the_access_log(tmp_path):
    """A path whose `%0A` would start a made-up line ("an admin page answered 200") and an agent
    with C1 controls, a quote and a backslash are logged as one line each, escaped, so that
    every line of the log is a real request."""
    forged = '127.0.0.1 - - [02/Dec/2026:10:00:00 +0000] "GET /admin/ HTTP/1.1" 200 1 "-" 1ms'
    target = "/api/v1/items/1%0A" + forged.replace(" ", "%20").replace('"', "%22").replace("[", "%5B").replace(
        "]", "%5D") + "%0D%09%1B%5B31m%5C"
    with served(tmp_path) as (url, token, access_log, error_log):
        status = raw_request(url, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                                  'User-Agent: agent\x85\x9b[2J"quoted"\\')
        assert status == 404
        wait_until(lambda: "/api/v1/items/1" in access_log.read_text(), timeout=10, what="the access line")
    lines = access_lines(access_log)
    assert all(ACCESS_LINE.match(line) for line in lines), lines
    # /health (once or more: a slow start answers a poll that timed out too) and this request, once.
    line = next(line for line in lines if "/api/v1/items/1" in line)
    assert [other for other in lines if '"GET /health ' not in other] == [line]
    request, agent = ACCESS_LINE.match(line).group("request", "agent")
    assert request == "GET /api/v1/items/1\\n" + forged.replace('"', '\\"') + "\\r\\t\\x1b[31m\\\\ HTTP/1.1"
    assert agent == 'agent\\x85\\x9b[2J\\"quoted\\"\\\\'
    assert not any(line.startswith(forged[:20]) for line in error_log.read_text().splitlines())


def test_no_credential_query_string_or_referrer_reaches_the_log(tmp_path):
    """The user name of a Basic header (where some clients put a token), a bearer token, a
    `?token=` in the query and the referrer are in no line of the access log nor of the
    error log; the requests themselves are logged."""
    basic_user, basic_password = "basic-user-Vq7Lm2", "basic-pass-Hz3Kd8"
    query_secret, referrer = "query-secret-Wx5Np1", "https://elsewhere.example/private-path-Rt6Yc4"
    with served(tmp_path) as (url, token, access_log, error_log):
        basic = base64.b64encode(f"{basic_user}:{basic_password}".encode()).decode()
        answers = [
            httpx.get(f"{url}/api/v1/search", params={"q": "x"}, headers={"Authorization": f"Basic {basic}"}),
            httpx.get(f"{url}/api/v1/search", params={"q": "x", "token": query_secret},
                      headers={"Authorization": f"Bearer {token}", "Referer": referrer}),
            httpx.get(f"{url}/login/", params={"token": query_secret}, headers={"Referer": referrer}),
        ]
        # (the second is 200, or 422 where the API refuses unknown parameters: the log is the point)
        assert answers[0].status_code == 401 and answers[1].status_code in (200, 422) and answers[2].status_code == 200
        wait_until(lambda: access_log.read_text().count('"GET /') >= 4, timeout=10, what="four access lines")
    lines = access_lines(access_log)
    assert sum('"GET /api/v1/search HTTP/1.1"' in line for line in lines) == 2
    assert any('"GET /login/ HTTP/1.1" 200' in line for line in lines)
    everything = access_log.read_text() + error_log.read_text()
    for secret in (basic_user, basic_password, basic, token, token.split("_")[-1], query_secret, "elsewhere.example",
                   "private-path"):
        assert secret not in everything, secret


def test_the_server_log_names_the_address_it_listens_on(tmp_path):
    with served(tmp_path) as (url, _token, _access_log, error_log):
        said = error_log.read_text()
    assert f"Listening at: {url} (" in said, said
