"""Issue 16: every item has a vector of its record's meaning (`library.meaning`), made by the
packaged model with no network, kept in step with every write like the FTS indexes, checked,
rebuilt and filled by a migration; each process's in-memory copy follows the writes."""

import numpy as np
import pytest
from django.db import connection

from library import meaning, store
from library.models import Item
from tests.conftest import make_item

pytestmark = pytest.mark.django_db


def vectors():
    """{item id: (digest, seq, vector)} as stored."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT item_id, digest, seq, vector FROM {meaning.TABLE}")
        return {row[0]: (row[1], row[2], meaning.from_blobs([row[3]])[0]) for row in cursor.fetchall()}


def topics():
    """Four records on four subjects, none sharing a content word with the questions below."""
    return {
        "ci": make_item(title="GitHub Actions ran every workflow twice",
                        summary="The push and pull_request triggers both fired; restricted push to the main branch."),
        "db": make_item(title="Postgres migration blocked by a lock timeout",
                        summary="ALTER TABLE on orders waited for a long transaction.", project="shop"),
        "image": make_item(title="Docker image shrunk with a slim base and multi-stage build",
                           summary="From 1.2 GB to 180 MB.", project="shop", source="agent-other"),
        "mail": make_item(title="Invoice reminder sent to the landlord",
                          summary="The rent for November was paid late."),
    }


def test_the_model_ships_in_the_package_and_ranks_by_meaning():
    """No download: the weights and the tokenizer come from the installed wheel. A question
    that shares no word with the record finds it first."""
    items = topics()
    near = meaning.nearest("make the container smaller", limit=4)
    assert near[0][0] == items["image"].pk
    assert meaning.nearest("schema change stuck waiting on a database", limit=1)[0][0] == items["db"].pk
    assert len(near) == 4 and all(-1.0 <= score <= 1.0 for _id, score in near)
    assert [score for _id, score in near] == sorted((score for _id, score in near), reverse=True)


def test_every_write_keeps_the_vectors_and_an_unchanged_record_is_not_embedded_again():
    item = make_item(title="Kestrel nest on the north tower", summary="Two chicks, ringed in May.")
    first = vectors()[item.pk]
    assert first[0] == store.record_digest(item)
    assert np.linalg.norm(first[2]) == pytest.approx(1.0, abs=1e-3)

    item.original = "user: a longer original text about the kestrels\nassistant: noted"
    item.save()
    assert vectors()[item.pk][1] == first[1]        # the record did not change: same vector, same seq

    item.title = "Peregrine falcon on the north tower"
    item.save()
    second = vectors()[item.pk]
    assert second[0] == store.record_digest(item) and second[1] > first[1]
    assert not np.allclose(second[2], first[2])

    Item.objects.filter(pk=item.pk).update(summary="Three chicks this year.")   # a queryset write
    assert vectors()[item.pk][0] == store.record_digest(Item.objects.get(pk=item.pk))

    item.delete()
    assert item.pk not in vectors()
    assert store.check().ok


def test_a_processs_copy_follows_writes_deletes_and_filters():
    items = topics()
    first = meaning.VECTORS.current()
    assert first.size == 4
    added = make_item(title="Container registry cleanup", summary="Old image tags deleted from the registry.")
    second = meaning.VECTORS.current()
    assert second.size == 5 and second.generation > first.generation
    assert second.matrix is first.matrix            # read only the new row, into the same arrays
    assert added.pk in dict(meaning.nearest("container images", limit=5))

    assert {i for i, _ in meaning.nearest("container", project="shop", limit=5)} == {items["image"].pk, items["db"].pk}
    assert {i for i, _ in meaning.nearest("container", source="agent-other", limit=5)} == {items["image"].pk}
    assert {i for i, _ in meaning.nearest("container", sources={"agent-test"}, limit=9)} == {
        items["ci"].pk, items["db"].pk, items["mail"].pk, added.pk}
    assert meaning.nearest("container", project="no-such-project", limit=5) == []

    items["image"].delete()
    third = meaning.VECTORS.current()
    assert third.size == 4 and items["image"].pk not in third.rows
    assert items["image"].pk not in dict(meaning.nearest("container images", limit=9))


def test_check_sees_missing_stale_and_foreign_vectors_and_reindex_repairs_them():
    items = topics()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {meaning.TABLE} WHERE item_id = %s", [items["ci"].pk])
        cursor.execute(f"UPDATE {meaning.TABLE} SET digest = 'stale' WHERE item_id = %s", [items["db"].pk])
        cursor.execute(f"UPDATE {meaning.STATE} SET model = 'another model 64'")
    report = store.check()
    assert report.meaning.missing == [items["ci"].pk] and report.meaning.different == [items["db"].pk]
    assert any("items without a vector" in problem for problem in report.problems)
    assert any("made by 'another model 64'" in problem for problem in report.problems)
    assert store.rebuild(only="meaning") == 4
    assert store.check().ok
    assert meaning.nearest("workflow triggered twice", limit=1)[0][0] == items["ci"].pk


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_a_vector_for_every_stored_item(capsys):
    from django.core.management import call_command

    items = topics()
    call_command("migrate", "library", "0012", verbosity=0)   # a library from before the vectors
    with connection.cursor() as cursor:
        assert not meaning.exists(cursor)
    make_item(title="Written while the vectors did not exist")   # the store skips them then
    call_command("migrate", "library", verbosity=0)
    assert f"{store.MEANING_LABEL}: 5/5 items" in capsys.readouterr().out
    assert set(vectors()) == {item.pk for item in Item.objects.all()}
    assert store.check().ok
    assert meaning.nearest("smaller docker image", limit=1)[0][0] == items["image"].pk
