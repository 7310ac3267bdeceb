"""System checks: the SQLite in use must have FTS5 and the configured tokenizer.

`jezero.E001` fails every management command (and so `jezero serve`) with a clear message
when the interpreter's SQLite is too old — the usual cause being that neither
`pysqlite3-binary` nor `sqlean.py` is installed, so the system's library was used.
"""

from django.conf import settings
from django.core import checks
from django.db.backends.sqlite3.base import Database


@checks.register("jezero")
def sqlite_has_tokenizer(app_configs=None, **kwargs):
    tokenizer = settings.JEZERO["storage"]["tokenizer"]
    original = settings.JEZERO["storage"]["original_tokenizer"]
    try:
        conn = Database.connect(":memory:")
        try:
            conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(a, tokenize = '{tokenizer}')")
            # The original-text index is contentless with deletes and one stored column (>= 3.47).
            conn.execute(f"CREATE VIRTUAL TABLE probe2 USING fts5(a, b UNINDEXED, content = '', contentless_delete = 1, "
                         f"contentless_unindexed = 1, tokenize = '{original}')")
            conn.execute("SELECT pow(0.5, 2.0)")  # search's recency factor needs the math functions
        finally:
            conn.close()
    except Database.Error as exc:
        return [checks.Error(
            f"SQLite {Database.sqlite_version} (module {Database.__name__}) cannot create an FTS5 "
            f"table with tokenizer {tokenizer!r} (records) and {original!r} (original text), or lacks the "
            f"math functions: {exc}",
            hint="Jezero needs SQLite >= 3.47. Install pysqlite3-binary "
                 "(Linux x86_64) or sqlean.py (other platforms), or change storage.tokenizer / storage.original_tokenizer "
                 f"in {settings.CONFIG_PATH}.",
            id="jezero.E001",
        )]
    return []


@checks.register("connectors")
def connectors_are_usable(app_configs=None, **kwargs):
    """`jezero.W002` for each connector added in the web app or the CLI that is not used: a
    name jezero.toml defines too, or options the schema no longer accepts. Run by `serve`,
    `worker`, `up`, `init` and `jezero check` (not by every verb: it reads the database)."""
    from django.db import DatabaseError

    from library.ingest import configured

    try:
        found = configured.problems()
    except DatabaseError:   # before the first migration: nothing added yet
        return []
    return [checks.Warning(f"connector {name!r}: {problem}",
                           hint=f"`jezero connector edit|remove {name}` (or Sources in the web app) changes the "
                                f"database's; jezero.toml's are in {settings.CONFIG_PATH}", id="jezero.W002")
            for name, problem in found]
