"""`jezero import-jsonl` / `export-jsonl`: validate whole files, all-or-nothing, round trip."""

import io
import json

import pytest

from library import records
from library.models import Item
from library.search import ALL_SOURCES, search
from tests.conftest import make_item

pytestmark = pytest.mark.django_db


def line(**fields):
    base = {"key": "s1", "title": "Stripe webhook signature failure", "summary": "Fixed the webhook secret.",
            "questions": ["Why did the Stripe webhook fail?"], "atoms": [{"kind": "fix", "text": "rotate secret"}],
            "project": "shop-site", "occurred_at": "2026-03-04T10:00:00"}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def test_import_creates_searchable_items_with_naive_times_as_utc():
    report = records.import_jsonl([line(), line(key="s2", title="Second", summary="Other.", questions=[], atoms=[])], source="agent-x")
    assert report.as_dict() == {"imported": 2, "updated": 0, "forgotten": 0, "errors": []}
    item = Item.objects.get(key="agent-x:s1")
    assert item.occurred_at.isoformat() == "2026-03-04T10:00:00+00:00"
    assert (item.source, item.trust, item.project) == ("agent-x", "own", "shop-site")
    assert [h.key for h in search("webhook", allowed_sources=ALL_SOURCES).hits] == ["agent-x:s1"]


def test_an_existing_key_is_updated_in_place():
    records.import_jsonl([line()], source="agent-x")
    first = Item.objects.get()
    report = records.import_jsonl([line(title="Stripe webhook: the real cause")], source="agent-x")
    assert (report.imported, report.updated) == (0, 1)
    again = Item.objects.get()
    assert again.pk == first.pk and again.title == "Stripe webhook: the real cause"
    assert [h.id for h in search("real cause", allowed_sources=ALL_SOURCES).hits] == [first.pk]


def test_any_bad_line_imports_nothing_and_every_bad_line_is_reported():
    make_item(key="agent-x:keep", source="agent-x", title="untouched")
    lines = [
        line(key="ok1"),
        "{not json",
        line(key="ok2", atoms=[{"kind": "idea", "text": "x"}]),
        line(key="ok3", occurred_at="yesterday"),
        "",
        line(key="ok4", title=""),
        line(key="ok1"),
        line(key="ok5", colour="red"),
        line(key=...),
        line(key="ok6", project="Shop Site"),
        json.dumps(["a list"]),
    ]
    report = records.import_jsonl(lines, source="agent-x")
    assert report.imported == report.updated == 0
    by_line = {e["line"]: e["error"] for e in report.errors}
    assert sorted(by_line) == [2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert "not valid JSON" in by_line[2]
    assert "atoms[0].kind: 'idea' is not one of" in by_line[3]
    assert "occurred_at: 'yesterday' is not an ISO 8601" in by_line[4]
    assert "title: must not be empty" in by_line[6]
    assert "already appears on line 1" in by_line[7]
    assert "colour: unknown field" in by_line[8]
    assert "key: required" in by_line[9]
    assert "project: 'Shop Site' is not a slug" in by_line[10]
    assert "expected a JSON object" in by_line[11]
    assert list(Item.objects.values_list("key", flat=True)) == ["agent-x:keep"]


def test_trust_comes_from_the_option_or_the_record():
    records.import_jsonl([line(key="m1")], source="mail-home", trust="external")
    assert Item.objects.get(key="mail-home:m1").trust == "external"
    report = records.import_jsonl([line(key="m2", trust="own")], source="mail-home", trust="external")
    assert "does not match --trust" in report.errors[0]["error"]
    records.import_jsonl([line(key="m3", trust="external")], source="mail-home")
    assert Item.objects.get(key="mail-home:m3").trust == "external"


def test_a_bad_source_name_is_refused():
    from library.errors import BadInput

    with pytest.raises(BadInput, match="--source"):
        records.import_jsonl([line()], source="has space")


def test_export_then_import_into_an_empty_library_round_trips_exactly():
    records.import_jsonl([
        line(key="a", hints={"cwd": "/home/ana/src/shop", "part": 1, "parts": 2}, original="user: hi",
             summarizer="anthropic:claude-haiku-4-5", input_tokens=1200, output_tokens=300, original_ref="sess-1"),
        line(key="b", project=None, questions=[], atoms=[], occurred_at="2026-01-02T03:04:05.123456+02:00"),
        line(key="c", title="Migración de café", summary="Acentos ñ y emoji ✓"),
    ], source="agent-x", trust="external")
    first = io.StringIO()
    assert records.export_jsonl(first) == 3
    Item.objects.all().delete()
    report = records.import_jsonl(first.getvalue().splitlines(), source="agent-x")
    assert report.errors == [] and report.imported == 3
    second = io.StringIO()
    records.export_jsonl(second)
    assert second.getvalue() == first.getvalue()
    exported = [json.loads(x) for x in first.getvalue().splitlines()]
    assert exported[0]["key"] == "agent-x:a" and exported[0]["trust"] == "external"
    assert exported[1]["occurred_at"] == "2026-01-02T01:04:05.123456Z"
    assert exported[0]["text_hash"] == __import__("hashlib").sha256(b"user: hi").hexdigest()


def test_export_can_take_one_source():
    make_item(source="a", key="a:1")
    make_item(source="b", key="b:1")
    out = io.StringIO()
    assert records.export_jsonl(out, source="b") == 1
    assert json.loads(out.getvalue())["key"] == "b:1"
