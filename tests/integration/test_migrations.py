"""The frozen migrations (docs/design.md "Upgrades and migrations") against today's code: a new library has exactly the tables
today's `library.store` makes, and a library upgraded by them holds exactly the index rows and
vectors today's `store.rebuild` would write. When today's code indexes differently, these
fail until a new migration brings libraries there."""

import pytest
from django.core.management import call_command
from django.db import connection

from library import meaning, store
from tests.conftest import make_item

TABLES = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"


# FTS5's format `version` is 4 when a table is made; SQLite raises it to 5 itself at the first
# row deleted from a secure-delete table's segments. Either says what the library went through
# (the tests before this one in its process), not what the code that made the table asked for.
SQLITE_FORMATS = {("version", 4): ("version", "4 or 5"), ("version", 5): ("version", "4 or 5")}


def schema():
    """Every table, virtual table and index with its SQL, and each FTS5 table's options (its
    format version as SQLITE_FORMATS reads it)."""
    with connection.cursor() as cursor:
        cursor.execute(TABLES)
        found = set(cursor.fetchall())
        options = {}
        for name in sorted(name for _type, name, _table, sql in found if sql and " USING fts5(" in sql):
            cursor.execute(f"SELECT k, v FROM {name}_config ORDER BY k")
            options[name] = [SQLITE_FORMATS.get(row, row) for row in cursor.fetchall()]
    return found, options


def held():
    """What the indexes and the vectors hold, token by token."""
    with connection.cursor() as cursor:
        out = {}
        for name, sql in {
            "record": "SELECT rowid, title, summary, questions, atoms, project FROM items_fts ORDER BY rowid",
            "words": "SELECT rowid, digest FROM items_words ORDER BY rowid",
            "words tokens": "SELECT term, doc, col, offset FROM items_words_instances ORDER BY doc, col, offset",
            "original": "SELECT rowid, digest FROM items_original_fts ORDER BY rowid",
            "original tokens": "SELECT term, doc, col, offset FROM items_original_fts_instances "
                               "ORDER BY doc, col, offset",
            "vectors": "SELECT item_id, digest, chunks FROM items_vectors ORDER BY item_id",
            "model": "SELECT model FROM items_vectors_state",
        }.items():
            cursor.execute(sql)
            out[name] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor.fetchall()]
    return out


@pytest.mark.django_db
def test_a_new_library_has_exactly_the_tables_todays_store_makes():
    """Names, SQL and FTS5 options (secure-delete) of every index table, its vocabulary and
    postings, and the vectors' tables: the same after today's code made them anew."""
    migrated = schema()
    store.rebuild()
    with connection.cursor() as cursor:
        meaning.drop(cursor)
        meaning.create(cursor)
    assert schema() == migrated


@pytest.mark.django_db(transaction=True)
def test_an_upgraded_library_holds_what_todays_code_would_write(capsys):
    """Items from before the indexes (migration 0006), in Japanese, with a private-use glyph of
    a terminal prompt, without an original: migrated, every row, token and vector is today's."""
    make_item(title="東京の会議の議事録", summary="Minutes of the Tokyo meeting", questions=["誰が来た?", "When?"],
              atoms=[{"kind": "decision", "text": "会議は毎週"}, {"kind": "fact", "text": "room 4"}], project="tokyo",
              original="user: 東京で会議 \ue0b0 main\nassistant: 了解しました, the minutes are in notes/tokyo.md")
    make_item(title="Reconciled the ledger", summary="Matched the statements.", questions=["Why off by 3?"])
    make_item(title="Café menu", summary="Déjà vu", original="user: the café menu\ue0a0branch " + "word " * 600)
    call_command("migrate", "library", "0006", verbosity=0)   # a library from before the indexes
    call_command("migrate", "library", verbosity=0)
    assert "item vectors: 3/3 items" in capsys.readouterr().out
    upgraded = held()
    assert len(upgraded["vectors"]) == 3 and upgraded["original tokens"] and upgraded["words tokens"]
    store.rebuild()
    assert held() == upgraded
    assert store.check().ok
