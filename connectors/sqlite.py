"""Reading an agent's SQLite database while the agent writes it (Hermes' `state.db`,
OpenCode's `opencode.db`), without ever writing it.

Every database is opened read-only (`mode=ro`, plus `PRAGMA query_only`), never `immutable`
(the agent writes while we read; an immutable reader ignores the WAL and the locks, so it
misses recent commits and can read pages a checkpoint is rewriting). A WAL reader takes no
lock a writer waits on; each read is one short read transaction on one snapshot, closed at
once (in rollback-journal mode that transaction holds a shared lock for its milliseconds,
which the writer's busy timeout absorbs). SQLite itself may create empty `-wal`/`-shm` side
files next to a WAL database that has none; the database is never written. Transient "disk
I/O error"/busy answers (a checkpoint racing a read-only open) are retried a few times.
Text stored as invalid UTF-8 comes back as `InvalidText` instead of failing the query.
No Django here.
"""

import sqlite3
import time as _time
from contextlib import contextmanager
from pathlib import Path

from .base import UnitError

_RETRIES = 3
_RETRY_WAIT = 0.05
_BUSY_TIMEOUT = 5.0


class InvalidText(str):
    """A text value stored as invalid UTF-8, decoded with U+FFFD. Readers skip the row it is in
    and count `invalid_utf8` (the default decoder would fail the whole query instead)."""


def _decode(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return InvalidText(raw.decode("utf-8", "replace"))


@contextmanager
def readonly_db(path):
    """A connection to the SQLite file at `path` that cannot write: `mode=ro` and `query_only`.
    Closed on exit. Raises `UnitError` when the file is missing, `sqlite3.Error` when SQLite
    refuses it (see `read_db`, which retries and converts)."""
    path = Path(path)
    if not path.is_file():
        raise UnitError(f"{path}: no such database")
    uri = path.absolute().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT, isolation_level=None)
    conn.text_factory = _decode
    try:
        conn.execute("PRAGMA query_only = 1")
        yield conn
    finally:
        conn.close()


def _transient(exc):
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and any(
        word in text for word in ("disk i/o error", "locked", "busy"))


def read_db(path, work):
    """`work(conn)` on a fresh read-only connection, inside one read transaction (one snapshot);
    a transient error is retried a few times. Returns what `work` returns; other SQLite errors
    (and a missing file) raise `UnitError`."""
    for attempt in range(1, _RETRIES + 1):
        try:
            with readonly_db(path) as conn:
                conn.execute("BEGIN")   # deferred: one snapshot for all queries; closing ends it
                return work(conn)
        except sqlite3.Error as exc:
            if attempt < _RETRIES and _transient(exc):
                _time.sleep(_RETRY_WAIT * attempt)
                continue
            raise UnitError(f"{path}: {exc}") from exc
    raise AssertionError("unreachable")


def columns(conn, table):
    """The column names of `table` in table order, as `SELECT *` returns them (empty when
    there is no such table), so that older and newer schemas can both be read."""
    return [row[1] for row in conn.execute(f"PRAGMA table_info({_quoted(table)})")]


def _quoted(name):
    return '"' + name.replace('"', '""') + '"'
