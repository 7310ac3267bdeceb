"""Consistent online copies of the library (SPEC §18).

`make_backup(path)` copies the database with SQLite's online backup API while the web
server and the worker keep reading and writing: the copy is one consistent snapshot (every
transaction committed before it started, nothing half-written). Restore = stop Jezero, put
the copy in place as `<data>/jezero.sqlite3` (removing any `-wal`/`-shm` files beside the
old one), start Jezero, run `jezero check`. `rotate()` keeps the newest N daily copies.
"""

import logging
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

    Raises BadInput when `path` exists (unless `overwrite`) or its folder does not.
    """
    target = Path(path).expanduser().resolve()
    if target.exists() and not overwrite:
        raise BadInput(f"{target} exists: choose a new file (or --force)")
    if not target.parent.is_dir():
        raise BadInput(f"{target.parent} is not a folder")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    connection.ensure_connection()
    destination = sqlite3.connect(partial)
    try:
        # Pages are copied in steps so writers are never blocked for long; SQLite restarts the
        # copy if the source changes in between, so the result is still one snapshot.
        connection.connection.backup(destination, pages=_PAGES_PER_STEP)
    finally:
        destination.close()
    partial.replace(target)
    logger.info("backup written path=%s bytes=%d", target, target.stat().st_size)
    return target.stat().st_size


def daily(now=None):
    """The daily backup task: a copy in JEZERO_BACKUP_DIR, keeping the newest JEZERO_BACKUP_KEEP.
    Does nothing when no backup folder is configured. Returns the new file or None."""
    folder = settings.JEZERO_BACKUP_DIR
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.now()).strftime("%Y-%m-%d")
    target = folder / f"jezero-{stamp}.sqlite3"
    make_backup(target, overwrite=True)
    rotate(folder, settings.JEZERO_BACKUP_KEEP)
    return target


def rotate(folder, keep):
    copies = sorted(Path(folder).glob("jezero-????-??-??.sqlite3"))
    for old in copies[:-keep] if keep else copies:
        old.unlink()
