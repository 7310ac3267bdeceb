"""Search by meaning (docs/design.md "Meaning"). Every item has vectors of what was said (`library.meaning`),
made by the packaged model with no network, kept in step with every write like the FTS
indexes, checked, rebuilt and filled by a migration; the fused search re-ranks its best
candidates by them."""

import re

import numpy as np
import pytest
from django.db import connection

from library import meaning, ranking, store
from library import search as lib
from library.models import Item
from library.ranking import Ranked
from library.search import ALL_SOURCES
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db

SESSIONS = {
    "ci": "user: the workflow runs twice on every push, once for push and once for pull_request\n"
          "assistant: I restricted the push trigger to main so each commit gets one build.",
    "db": "user: the migration hangs\nassistant: ALTER TABLE orders is waiting on a lock held by a long "
          "transaction; I set lock_timeout.",
    "image": "user: the docker image is 1.2 GB\nassistant: switched to python:3.12-slim and a multi-stage "
             "build, now 180 MB.",
    "mail": "From: landlord. The November rent arrived late; please pay by the first of the month.",
}


def vectors():
    """{item id: (digest, chunks)} as stored: one row of DIM signed bytes per chunk, read as
    `meaning.similarities` reads them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT item_id, digest, chunks FROM {meaning.TABLE}")
        return {row[0]: (row[1], np.frombuffer(row[2], dtype=np.int8).reshape(-1, meaning.DIM))
                for row in cursor.fetchall()}


def sessions():
    return {name: make_item(title=f"Session {name}", original=text) for name, text in SESSIONS.items()}


def test_the_packaged_model_finds_what_was_said_by_its_meaning():
    """No download: weights and tokenizer come from the installed wheel. A question sharing no
    word with the session is closest to the right one."""
    items = sessions()
    ids = [item.pk for item in items.values()]
    for question, wanted in (("make the container smaller", "image"), ("schema change stuck waiting", "db"),
                             ("overdue payment to the owner of the flat", "mail")):
        close = meaning.similarities(question, ids)
        assert max(close, key=close.get) == items[wanted].pk, question
    assert meaning.similarities("", ids) == {}


def test_a_long_original_is_cut_into_chunks_and_its_closest_chunk_counts():
    filler = " ".join(f"paragraph {n} about the garden fence and the hedge." for n in range(200))
    item = make_item(title="Long session", original=f"{filler}\nuser: the docker image is too big, shrink it.")
    chunks = vectors()[item.pk][1]
    assert len(chunks) > 5 and (np.abs(chunks).max(axis=1) == 127).all()   # each scaled to ±127 at its peak
    other = make_item(title="Other", original=SESSIONS["mail"])
    close = meaning.similarities("reduce the container image size", [item.pk, other.pk])
    assert close[item.pk] > close[other.pk]


def test_every_write_keeps_the_vectors_and_unchanged_text_is_not_embedded_again(monkeypatch):
    embedded = []
    real = meaning.chunk_vectors
    monkeypatch.setattr(meaning, "chunk_vectors", lambda texts: embedded.extend(texts) or real(texts))
    item = make_item(title="Kestrel nest", summary="Two chicks.", original="user: two kestrel chicks, ringed in May")
    assert vectors()[item.pk][0] == store.digest(item.original) and len(embedded) == 1

    item.title = "Kestrel nest on the north tower"      # the record changes, what was said does not
    item.save()
    assert len(embedded) == 1

    item.original = "user: three kestrel chicks this year"
    item.save()
    assert embedded[-1] == item.original and vectors()[item.pk][0] == store.digest(item.original)

    Item.objects.filter(pk=item.pk).update(original="")      # a queryset write; no original: the record
    assert vectors()[item.pk][0] == store.digest("Kestrel nest on the north tower\nTwo chicks.")

    item.delete()
    assert item.pk not in vectors()
    assert store.check().ok


def test_search_re_ranks_its_best_candidates_by_meaning(settings, monkeypatch):
    """Both sessions hold 'build' once and no other word of the question: lexically the
    shorter one comes first; the question means the other."""
    ci = make_item(title="Session one", original=SESSIONS["ci"], occurred_at=days_ago(2))
    image = make_item(title="Session two", original=SESSIONS["image"], occurred_at=days_ago(2))
    query = "build happening two times"
    hits = lib.search(query, allowed_sources=ALL_SOURCES, now=NOW).hits
    assert [hit.id for hit in hits] == [ci.pk, image.pk]
    assert hits[0].matched_in == ("original", "meaning") and hits[1].matched_in == ("original",)

    monkeypatch.setitem(settings.JEZERO["search"], "meaning_weight", 0.0)    # off: the lexical order
    assert [hit.id for hit in lib.search(query, allowed_sources=ALL_SOURCES, now=NOW).hits] == [image.pk, ci.pk]


def test_the_search_page_says_which_result_is_close_in_meaning(client, people):
    make_item(title="Session one", original=SESSIONS["ci"], occurred_at=days_ago(2))
    make_item(title="Session two", original=SESSIONS["image"], occurred_at=days_ago(2))
    client.force_login(people["plain"])
    page = client.get("/", {"q": "build happening two times"}).content.decode()
    found = re.findall(r'<span class="matched"[^>]*>([^<]*)</span>', page)
    assert found == ["found in what was said, close in meaning", "found in what was said"]


def test_meaning_never_adds_a_result_and_leaves_records_only_and_other_scripts_alone():
    sessions()
    assert lib.search("reduce container footprint", allowed_sources=ALL_SOURCES, now=NOW).hits == []
    exact = lib.search("build", allowed_sources=ALL_SOURCES, now=NOW, records_only=True)
    assert all(hit.matched_in == ("record",) for hit in exact.hits)
    assert not meaning.applies("容器镜像太大") and not meaning.applies("образ докера")
    assert meaning.applies("Docker-Image verkleinern") and meaning.applies("zmniejszyć obraz dockera")


def test_rerank_scales_closeness_over_the_rows_the_words_ranked_and_leaves_the_rest():
    rows = [Ranked(1, 3.0, 3, ("original",), 1.0), Ranked(2, 2.0, 2, ("original",), 1.0),
            Ranked(3, 1.0, 1, ("original",), 0.5), Ranked(4, 0.0, 4, ("original",), 1.0)]   # 4: listed by date
    reranked = ranking.rerank(rows, {1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}, weight=2.0, depth=4)
    # 1: 3.0 + 2·0 = 3.0; 2: 2.0 + 2·0.5 = 3.0 (older: after 1); 3: 1.0 + 2·1·0.5 (its recency factor) = 2.0
    assert [(row.id, row.score, row.matched_in) for row in reranked] == [
        (1, 3.0, ("original",)), (2, 3.0, ("original", "meaning")), (3, 2.0, ("original", "meaning")),
        (4, 0.0, ("original",))]
    assert ranking.rerank(rows, {1: 0.4, 2: 0.4}, weight=1.0, depth=4) == rows     # nothing to tell apart


def test_check_sees_missing_stale_and_foreign_vectors_and_reindex_repairs_them():
    items = sessions()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {meaning.TABLE} WHERE item_id = %s", [items["ci"].pk])
        cursor.execute(f"UPDATE {meaning.TABLE} SET digest = 'stale' WHERE item_id = %s", [items["db"].pk])
        cursor.execute(f"UPDATE {meaning.STATE} SET model = 'another model 64'")
    report = store.check()
    assert report.meaning.missing == [items["ci"].pk] and report.meaning.different == [items["db"].pk]
    assert any("items without vectors" in problem for problem in report.problems)
    assert any("made by 'another model 64'" in problem for problem in report.problems)
    assert store.rebuild(only="meaning") == 4
    assert store.check().ok
    assert items["ci"].pk in meaning.similarities("workflow", [items["ci"].pk])


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_vectors_for_every_stored_item(capsys):
    from django.core.management import call_command

    sessions()
    call_command("migrate", "library", "0012", verbosity=0)   # a library from before the vectors
    with connection.cursor() as cursor:
        assert not meaning.exists(cursor)
    make_item(title="Written while the vectors did not exist")   # the store skips them then
    call_command("migrate", "library", verbosity=0)
    assert f"{store.MEANING_LABEL}: 5/5 items" in capsys.readouterr().out
    assert set(vectors()) == {item.pk for item in Item.objects.all()}
    assert store.check().ok
