"""Consistent online copies of the library (docs/design.md "Backups").

`make_backup(path)` copies the database with SQLite's online backup API while the web
server and the worker keep reading and writing: the copy is one consistent snapshot (every
transaction committed before it started, nothing half-written). It holds token hashes and
every item, so it is written readable by its owner only (0600; a folder `daily()` creates is
0700), and it is one self-contained file in rollback-journal mode: no `-wal`/`-shm` beside it,
and none appear when it is opened later. Restore = stop Jezero, put
the copy in place as `<data>/jezero.sqlite3` (removing any `-wal`/`-shm` files beside the
old one), start Jezero, run `jezero check`. `rotate()` keeps the newest N daily copies.
"""

import logging
import os
import sqlite3  # the bundled SQLite (jezero_site swapped it in)
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection

from library.errors import BadInput

logger = logging.getLogger(__name__)
_PAGES_PER_STEP = 1024


def make_backup(path, *, overwrite=False):
    """Write a consistent copy of the database to `path`; returns its size in bytes.

    Raises BadInput when `path` exists (unless `overwrite`), its folder does not, or it is the
    live database.
    """
    target = Path(path).expanduser().resolve()
    if target.exists() and not overwrite:
        raise BadInput(f"{target} exists: choose a new file (or --force)")
    if not target.parent.is_dir():
        raise BadInput(f"{target.parent} is not a folder")
    if target == Path(settings.DATABASES["default"]["NAME"]).resolve():
        raise BadInput(f"{target} is the library itself: choose another file")
    partial = target.with_name(target.name + ".partial")
    for leftover in (partial, *_sidecars(partial)):
        leftover.unlink(missing_ok=True)
    # Created empty with 0600 before SQLite opens it (an empty file is an empty database);
    # SQLite gives any journal it makes the same mode.
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    connection.ensure_connection()
    destination = sqlite3.connect(partial)
    try:
        # Pages are copied in steps so writers are never blocked for long; SQLite restarts the
        # copy if the source changes in between, so the result is still one snapshot.
        connection.connection.backup(destination, pages=_PAGES_PER_STEP)
        # The copied header says WAL, as the live database is: switch the copy to a rollback
        # journal, which folds and removes its -wal/-shm, so it is one file and stays one.
        destination.execute("PRAGMA journal_mode=DELETE").fetchone()
    finally:
        destination.close()
    partial.replace(target)
    for leftover in _sidecars(target):  # an older copy's, when overwriting
        leftover.unlink(missing_ok=True)
    logger.info("backup written path=%s bytes=%d", target, target.stat().st_size)
    return target.stat().st_size


def _sidecars(path):
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def daily(now=None):
    """The daily backup task: a copy in JEZERO_BACKUP_DIR, keeping the newest JEZERO_BACKUP_KEEP.
    Does nothing when no backup folder is configured. Returns the new file or None."""
    folder = settings.JEZERO_BACKUP_DIR
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)  # only a folder made here: an existing one keeps its mode
    stamp = (now or datetime.now()).strftime("%Y-%m-%d")
    target = folder / f"jezero-{stamp}.sqlite3"
    make_backup(target, overwrite=True)
    rotate(folder, settings.JEZERO_BACKUP_KEEP)
    return target


def rotate(folder, keep):
    copies = sorted(Path(folder).glob("jezero-????-??-??.sqlite3"))
    for old in copies[:-keep] if keep else copies:
        old.unlink()
