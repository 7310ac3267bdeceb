"""What a backup leaves on disk: one file readable by its owner only, in a folder only its owner
may enter when Jezero made it, and nothing beside it."""

import sqlite3  # the bundled SQLite (jezero_site is loaded by pytest-django first)
from datetime import datetime

import pytest

from library import backup
from tests.conftest import make_item

# Committed rows: the backup reads the database as another reader would, outside the test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def mode(path):
    return oct(path.stat().st_mode & 0o777)


def test_the_nightly_backup_is_private_and_alone_in_a_private_folder(settings, tmp_path):
    make_item(title="kept in the copy")
    settings.JEZERO_BACKUP_DIR = tmp_path / "backups" / "nightly"
    copy = backup.daily(now=datetime(2026, 11, 29, 3, 41))
    assert copy == settings.JEZERO_BACKUP_DIR / "jezero-2026-11-29.sqlite3"
    assert mode(copy) == "0o600" and mode(copy.parent) == "0o700"
    assert sorted(p.name for p in copy.parent.iterdir()) == ["jezero-2026-11-29.sqlite3"]
    with sqlite3.connect(copy) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert db.execute("SELECT title FROM items").fetchall() == [("kept in the copy",)]
    assert sorted(p.name for p in copy.parent.iterdir()) == ["jezero-2026-11-29.sqlite3"]  # reading adds nothing


def test_overwriting_a_readable_copy_makes_it_private(tmp_path):
    target = tmp_path / "copy.sqlite3"
    target.write_bytes(b"an old copy")
    target.chmod(0o644)
    backup.make_backup(target, overwrite=True)
    assert mode(target) == "0o600"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.sqlite3"]


def test_an_existing_backup_folder_keeps_its_own_mode(settings, tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o750)
    folder.chmod(0o750)
    settings.JEZERO_BACKUP_DIR = folder
    copy = backup.daily(now=datetime(2026, 11, 30))
    assert mode(folder) == "0o750" and mode(copy) == "0o600"

