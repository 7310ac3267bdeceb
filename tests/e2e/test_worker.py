"""`jezero worker` as a service manager runs it: it starts, runs the periodic tasks at once
(a heartbeat that /health then reports), and stops cleanly on SIGTERM."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import wait_for_heartbeat

JEZERO = Path(sys.executable).with_name("jezero")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_the_worker_beats_and_stops_cleanly(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))
    subprocess.run([str(JEZERO), "init"], env=env, check=True, capture_output=True, timeout=60)
    worker = subprocess.Popen([str(JEZERO), "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        beat = wait_for_heartbeat(tmp_path / "data" / "jezero.sqlite3", worker)
    except AssertionError:
        beat = None   # the worker's stderr below says why
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=30)
    assert beat, err
    assert worker.returncode in (0, -signal.SIGTERM), err
    assert "Traceback" not in err
    assert err.count("Huey consumer started") == 1  # logged once, not twice


def test_an_uploaded_session_is_searchable_within_a_minute_with_the_worker_running(tmp_path):
    """The first hour: a device uploads a session (not ended: Codex never says so) to a running
    server and worker; it is in `jezero timeline` and found by search within 60 s, not at the
    next scheduled run 15 minutes on."""
    import json
    import time

    import httpx2 as httpx

    from tests.conftest import wait_until
    from tests.e2e.conftest import serving, uploading_library, worker_running

    env, jezero, token = uploading_library(tmp_path)
    with worker_running(env, jezero):
        with serving(env) as url:
            body = (FIXTURES / "codex" / "sessions" / "2025" / "09" / "14"
                    / "rollout-2025-09-14T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl").read_bytes()
            prompt = ("The discount must never take the cart total below zero, and a percentage discount applies "
                      "before shipping while a fixed-amount voucher applies after it. Add tests for a 100 % discount, "
                      "a voucher larger than the total, and both together; then update the changelog entry for the "
                      "quokkavelt release so the support team knows how refunds are computed.")
            body += json.dumps({   # one more turn, so that the session is past upload's min_chars (400)
                "timestamp": "2025-09-14T09:01:00.000Z", "type": "event_msg",
                "payload": {"type": "user_message", "message": prompt, "images": [], "local_images": []},
            }).encode() + b"\n"
            sent = time.monotonic()
            answer = httpx.post(f"{url}/api/v1/sessions", params={"agent": "codex", "session_id": "codex-first"},
                                content=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert answer.status_code == 201, answer.text

            def listed():
                found = json.loads(jezero("timeline", "--json").stdout)["results"]
                return found if found else None

            found = wait_until(listed, timeout=60, interval=1, what="the uploaded session in jezero timeline")
            took = time.monotonic() - sent
        assert found[0]["source"] == "uploads-laptop" and took < 60
        assert json.loads(jezero("search", "quokkavelt", "--json").stdout)["results"]
