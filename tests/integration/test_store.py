"""docs/design.md "The indexes": every write to an item updates its FTS row in the same transaction; `check`
sees any difference; `rebuild` (jezero reindex) brings the index back."""

import pytest
from django.db import connection, transaction

from library import store
from library.models import Item
from tests.conftest import NOW, make_item

pytestmark = pytest.mark.django_db


def fts_rows():
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid, title, summary, questions, atoms, project FROM items_fts ORDER BY rowid")
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


def test_the_index_holds_the_exact_flattened_text():
    item = make_item(title="T", summary="S", questions=["q one?", "q two?"],
                     atoms=[{"kind": "decision", "text": "a1"}, {"kind": "fix", "text": "a2"}], project="p")
    assert fts_rows() == {item.id: ("T", "S", "q one?\nq two?", "a1\na2", "p")}
    nothing = make_item(title="U", summary="V")
    assert fts_rows()[nothing.id] == ("U", "V", "", "", "")


def test_create_update_delete_through_the_model():
    item = make_item(title="first title")
    item.title = "second title"
    item.project = "moved"
    item.save()
    assert fts_rows()[item.id][0] == "second title"
    assert fts_rows()[item.id][4] == "moved"
    item.delete()
    assert fts_rows() == {}
    assert store.check().ok


def test_queryset_update_delete_and_bulk_writes_keep_the_index():
    items = [make_item(title=f"row {n}", project="old") for n in range(5)]
    Item.objects.filter(pk__in=[i.pk for i in items[:3]]).update(project="new")
    assert [fts_rows()[i.pk][4] for i in items] == ["new", "new", "new", "old", "old"]
    Item.objects.filter(pk=items[0].pk).delete()
    assert items[0].pk not in fts_rows()
    created = Item.objects.bulk_create([Item(key=f"b:{n}", source="b", title=f"bulk {n}", summary="s",
                                             occurred_at=items[1].occurred_at) for n in range(3)])
    assert all(fts_rows()[c.pk][0] == c.title for c in created)
    for c in created:
        c.summary = "changed"
    Item.objects.bulk_update(created, ["summary"])
    assert all(fts_rows()[c.pk][1] == "changed" for c in created)
    report = store.check()
    assert report.ok, report.problems
    assert report.items == report.indexed == 7


def test_a_failed_transaction_leaves_item_and_index_untouched():
    item = make_item(title="before")
    with pytest.raises(RuntimeError), transaction.atomic():
        item.title = "after"
        item.save()
        raise RuntimeError("crash mid-write")
    assert Item.objects.get(pk=item.pk).title == "before"
    assert fts_rows()[item.pk][0] == "before"


def test_check_reports_a_missing_row_an_extra_row_and_different_text():
    a, b, _ = make_item(title="a"), make_item(title="b"), make_item(title="c")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM items_fts WHERE rowid = %s", [a.pk])
        cursor.execute("INSERT INTO items_fts(rowid, title, summary, questions, atoms, project) "
                       "VALUES (9999, 'ghost', '', '', '', '')")
        cursor.execute("UPDATE items_fts SET title = 'tampered' WHERE rowid = %s", [b.pk])
    report = store.check()
    assert not report.ok
    assert (report.missing, report.extra, report.different) == ([a.pk], [9999], [b.pk])
    assert any("items without a row in the record index" in p for p in report.problems)


def test_rebuild_restores_agreement():
    items = [make_item(title=f"r{n}") for n in range(4)]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM items_fts")
    assert not store.check().ok
    assert store.rebuild() == 4
    report = store.check()
    assert report.ok, report.problems
    assert set(fts_rows()) == {i.pk for i in items}


def test_a_tokenizer_change_is_reported_until_reindexed(jezero_config):
    make_item(title="café")
    jezero_config("storage", tokenizer="unicode61 remove_diacritics 2")
    report = store.check()
    assert any("run `jezero reindex`" in p for p in report.problems)
    store.rebuild()
    assert store.check().ok
    assert store.recorded_tokenizers()["record"] == "unicode61 remove_diacritics 2"
    from library.search import ALL_SOURCES, search

    assert [h.title for h in search("cafe", allowed_sources=ALL_SOURCES).hits] == ["café"]


def test_optimize_keeps_the_same_answers():
    from library.search import ALL_SOURCES, search

    for n in range(30):
        make_item(title=f"stoat {n}", summary="stoat " * (n % 5 + 1))
    before = search("stoat", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict()
    store.optimize()
    assert search("stoat", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict() == before
    assert store.check().ok


def _segments():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT segid) FROM items_fts_idx")
        return cursor.fetchone()[0]


def test_the_daily_maintenance_task_merges_the_index():
    """Each single write adds an FTS5 segment; the periodic task merges them into one."""
    from library.tasks import optimize_index

    for n in range(20):
        make_item(title=f"weasel {n}")
    assert _segments() > 1
    optimize_index()  # Huey runs in immediate mode in tests
    assert _segments() == 1
    assert store.check().ok


def test_optimize_merges_in_short_steps_and_a_stopped_merge_goes_on(monkeypatch):
    """`optimize` merges an index in steps of MERGE_PAGES pages, each its own transaction (one
    transaction as large as the index would hold writers back for minutes and double the
    disk it needs), into one b-tree; a merge stopped after its first step is finished by the
    next call."""
    from django.test.utils import CaptureQueriesContext

    from library.search import ALL_SOURCES, search

    words = iter(f"w{n:05d}x" for n in range(10_000))   # many distinct trigrams: an index of many pages

    def write(count):
        for n in range(count):
            make_item(title=f"marten {n}", summary="marten den " * (n % 7 + 1) + " ".join(next(words) for _ in range(100)))

    monkeypatch.setattr(store, "MERGE_PAGES", 1)
    write(40)
    before = search("marten den", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict()
    assert _segments() > 1
    with CaptureQueriesContext(connection) as queries:
        store.merge_index("items_fts")
    assert len([q for q in queries.captured_queries if "'merge'" in q["sql"]]) > 2
    assert _segments() == 1
    assert search("marten den", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict() == before

    write(40)
    with connection.cursor() as cursor:   # a merge stopped after its first step
        cursor.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('merge', -1)")
    assert _segments() > 1
    before = search("marten den", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict()
    store.optimize()
    assert _segments() == 1
    assert search("marten den", allowed_sources=ALL_SOURCES, limit=50, now=NOW).as_dict() == before
    assert store.check().ok


@pytest.mark.django_db(transaction=True)  # committed writes: FTS5 flushes its segments on commit
def test_check_runs_the_fts5_integrity_check():
    """Damage inside the index itself (not just its text) is caught by FTS5's own check."""
    for n in range(5):
        make_item(title=f"vole {n}")
    assert store.check().ok
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM items_fts_data WHERE id > 10")  # the segments' leaf pages
    report = store.check()
    assert any("FTS5 integrity-check of the record index failed" in p for p in report.problems)
    store.rebuild()  # and `jezero reindex` is the cure
    assert store.check().ok


# --- the original-text index (docs/design.md "The indexes") -----------------------------------------------------

def said(word):
    """Item ids whose original holds `word`, straight from the original-text index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid FROM items_original_fts WHERE items_original_fts MATCH %s ORDER BY rowid",
                       [f'"{word}"'])
        return [row[0] for row in cursor.fetchall()]


def test_the_original_index_follows_every_write():
    item = make_item(original="user: the albatross build failed")
    assert said("albatross") == [item.pk]
    item.original = "user: the bittern build failed"
    item.save()
    assert (said("albatross"), said("bittern")) == ([], [item.pk])
    Item.objects.filter(pk=item.pk).update(original="user: cassowary")
    assert (said("bittern"), said("cassowary")) == ([], [item.pk])
    item.refresh_from_db()
    item.original = "user: dunlin"
    Item.objects.bulk_update([item], ["original"])
    assert said("dunlin") == [item.pk]
    created = Item.objects.bulk_create([Item(key="b:1", source="b", title="t", summary="s", original="user: egret",
                                             occurred_at=NOW)])
    assert said("egret") == [created[0].pk]
    Item.objects.filter(pk=item.pk).delete()
    assert said("dunlin") == []
    assert store.check().ok


def test_a_record_change_leaves_the_original_row_alone():
    """Retagging or re-summarising does not re-tokenise tens of kilobytes of original."""
    item = make_item(original="user: the flamingo " * 50)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM items_original_fts_data")
        before = cursor.fetchone()[0]
    for n in range(5):
        Item.objects.filter(pk=item.pk).update(project=f"p{n}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM items_original_fts_data")
        assert cursor.fetchone()[0] == before  # no new index segment was written
    assert said("flamingo") == [item.pk]
    assert store.check().ok


def test_check_reports_drift_in_the_original_index():
    a, b, _ = make_item(original="user: a"), make_item(original="user: b"), make_item(original="user: c")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM items_original_fts WHERE rowid = %s", [a.pk])
        cursor.execute("DELETE FROM items_original_fts WHERE rowid = %s", [b.pk])
        cursor.execute("INSERT INTO items_original_fts(rowid, text, digest) VALUES (%s, 'user: tampered', 'x')", [b.pk])
        cursor.execute("UPDATE items SET original = 'user: changed behind the index' WHERE id = %s", [_.pk])
    report = store.check()
    assert (report.original.missing, report.original.different) == ([a.pk], [b.pk, _.pk])
    assert any("items without a row in the original-text index" in p for p in report.problems)
    assert any("items whose original-text index text differs" in p for p in report.problems)
    store.rebuild()
    assert store.check().ok
    assert said("changed") == [_.pk]


def test_an_original_tokenizer_change_is_reported_until_reindexed(jezero_config):
    make_item(original="user: running the runner")
    jezero_config("storage", original_tokenizer="porter unicode61 remove_diacritics 2")
    assert any("storage.original_tokenizer" in p for p in store.check().problems)
    store.rebuild()
    assert store.check().ok
    assert store.recorded_tokenizers()["original"] == "porter unicode61 remove_diacritics 2"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("before, table, label, find", [
    ("0006", "items_original_fts", "original-text index", lambda: said("godwit")),
    ("0010", "items_words", "record word index", lambda: recorded("godwit")),
])
def test_the_migration_builds_a_new_index_for_an_existing_library(capsys, before, table, label, find):
    from django.core.management import call_command

    items = [make_item(title=f"Godwit report {n}", original=f"user: the godwit report {n}") for n in range(3)]
    call_command("migrate", "library", before, verbosity=0)  # a library from before the index
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE %s", [f"{table}%"])
        assert cursor.fetchone()[0] == 0
    call_command("migrate", "library", verbosity=0)
    assert f"{label}: 3/3 items" in capsys.readouterr().out
    assert find() == [i.pk for i in items]
    assert store.check().ok


def test_redact_stored_takes_a_secret_out_of_what_can_be_found(jezero_config):
    """A rule added later: redact-stored rewrites the original, and its old words are gone
    from the original-text index in the same transaction."""
    from library.ingest import maintenance
    from library.search import ALL_SOURCES, search

    item = make_item(title="Deploy notes", original="user: the vault passphrase is zanzibar-4412, keep it")
    assert [h.id for h in search("zanzibar", allowed_sources=ALL_SOURCES).hits] == [item.pk]
    jezero_config("redaction", extra_patterns=[{"kind": "passphrase", "pattern": r"zanzibar-\d+"}])
    assert maintenance.redact_stored().changed == 1
    assert search("zanzibar", allowed_sources=ALL_SOURCES).hits == []
    assert said("zanzibar") == [] and said("REDACTED") == [item.pk]
    assert store.check().ok


def test_redact_stored_takes_a_secret_out_of_the_record_word_index(jezero_config):
    from library.ingest import maintenance
    from library.search import ALL_SOURCES, search

    item = make_item(title="Vault passphrase zanzibar-4412 set", original="user: rotate it")
    assert [h.id for h in search("zanzibar", allowed_sources=ALL_SOURCES).hits] == [item.pk]
    jezero_config("redaction", extra_patterns=[{"kind": "passphrase", "pattern": r"zanzibar-\d+"}])
    assert maintenance.redact_stored().changed == 1
    assert search("zanzibar", allowed_sources=ALL_SOURCES).hits == []
    assert recorded("zanzibar") == []
    assert store.check().ok


def recorded(word):
    """Item ids whose record holds `word`, straight from the record word index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid FROM items_words WHERE items_words MATCH %s ORDER BY rowid", [f'"{word}"'])
        return [row[0] for row in cursor.fetchall()]


def test_the_record_word_index_follows_every_write():
    item = make_item(title="Albatross build failed", questions=["why did the albatross build fail?"])
    assert recorded("albatross") == [item.pk]
    item.title = "Bittern build failed"
    item.questions = []
    item.save()
    assert (recorded("albatross"), recorded("bittern")) == ([], [item.pk])
    Item.objects.filter(pk=item.pk).update(summary="The cassowary step broke.")
    assert recorded("cassowary") == [item.pk]
    item.refresh_from_db()
    item.atoms = [{"kind": "fix", "text": "pin dunlin to 2.1"}]
    Item.objects.bulk_update([item], ["atoms"])
    assert recorded("dunlin") == [item.pk]
    created = Item.objects.bulk_create([Item(key="b:1", source="b", title="Egret", summary="s", occurred_at=NOW,
                                             project="heron-site")])
    assert recorded("egret") == recorded("heron") == [created[0].pk]   # the project column too
    Item.objects.filter(pk=item.pk).delete()
    assert recorded("dunlin") == []
    assert store.check().ok


def test_check_reports_drift_in_the_record_word_index_and_reindex_repairs_it():
    a, b = make_item(title="Godwit"), make_item(title="Knot")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM items_words WHERE rowid = %s", [a.pk])
        cursor.execute("UPDATE items SET title = 'Changed behind the index' WHERE id = %s", [b.pk])
        cursor.execute("UPDATE items_fts SET title = 'Changed behind the index' WHERE rowid = %s", [b.pk])
    report = store.check()
    assert (report.words.missing, report.words.different) == ([a.pk], [b.pk])
    assert report.record.different == []
    assert any("items without a row in the record word index" in p for p in report.problems)
    assert any("items whose record word index text differs" in p for p in report.problems)
    assert store.rebuild(only="words") == 2
    # The title changed behind the store's back: b (no original) has vectors of its old record.
    assert store.check().problems == [f"items whose vectors were made from another text: {b.pk}; "
                                      "run `jezero reindex --only meaning`"]
    assert store.rebuild(only="meaning") == 2
    assert store.check().ok
    assert recorded("changed") == [b.pk] and recorded("godwit") == [a.pk]
