"""The access log of a real `jezero serve` (gunicorn) never records a query string: uploads
carry `git_remote` in theirs, which may hold `https://user:token@host/…` (issue 12)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")


def test_an_upload_with_a_token_in_its_query_is_logged_without_the_query(tmp_path):
    """The request is logged (method, path, status), its query string is not: neither the
    token inside `git_remote` nor a search's words reach the log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path), JEZERO_ALLOWED_HOSTS="127.0.0.1")

    def jezero(*args):
        done = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    jezero("init")
    token = json.loads(jezero("client", "add", "laptop", "--sources", "*", "--scopes", "upload", "--upload-source",
                              "uploads-laptop", "--json"))["token"]
    secret = "gh" + "p_" + "Qm4vXr8TzK2LwP9sNd3YhB6jFc1GaE5uRo7i"
    log_path = tmp_path / "access.log"
    port = free_port()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(JEZERO), "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"], env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
        params = {"agent": "claude_code", "session_id": "s1", "cwd": "/home/ana/src/shop",
                  "git_remote": f"https://ana:{secret}@github.com/acme/shop.git", "git_branch": "main"}
        upload = httpx.post(f"{url}/api/v1/sessions", params=params, content=b"not a transcript\n",
                            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
                            timeout=10)
        assert upload.status_code == 422  # parsed and refused: what matters here is the log line
        search = httpx.get(f"{url}/api/v1/search", params={"q": "zanzibar-passphrase"},
                           headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert search.status_code in (200, 403)
        wait_until(lambda: log_path.read_text().count("/api/v1/") >= 2, timeout=10, what="two access log lines")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    logged = log_path.read_text()
    assert '"POST /api/v1/sessions HTTP/1.1" 422' in logged and '"GET /api/v1/search HTTP/1.1"' in logged
    assert secret not in logged and "git_remote" not in logged and "github.com" not in logged
    assert "zanzibar" not in logged and "?" not in logged
