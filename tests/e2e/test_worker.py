"""`jezero worker` as a service manager runs it: it starts, runs the periodic tasks at once
(a heartbeat that /health then reports), and stops cleanly on SIGTERM."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import wait_for_heartbeat

JEZERO = Path(sys.executable).with_name("jezero")


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
