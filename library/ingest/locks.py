"""The connector run lock: one run per connector at a time, across processes.

A file lock per connector in the data folder's `locks/`, taken without waiting. A run holds
it from before its report is written until after that report is saved finished
(`pipeline.run`); removing a connector (`configured.remove`) and forgetting its cursors
(`sources.reset`) take it so that no run of it is under way; the run reaper takes it to tell
a live run from a dead one (`pipeline.reap_runs`). The operating system drops it when its process ends, however it
ends. Nothing here imports the rest of ingest, so every one of those can import it.
"""

import fcntl
from contextlib import contextmanager

from django.conf import settings

from library.errors import RunRefused


@contextmanager
def connector_lock(name):
    """Hold the connector's run lock (non-blocking); RunRefused when another run has it."""
    folder = settings.DATA_DIR / "locks"
    folder.mkdir(exist_ok=True)
    with open(folder / f"connector-{name}.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunRefused(f"connector {name!r} is already running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
