"""Loose checking (docs/design.md "Loose checking"): what cheap models send is repaired where it can be, refused where not."""

import pytest

from library.ingest.summarize import SummaryError
from library.ingest.summarize.schema import check_answer, extract_json_object, normalise_project

BASE = {"title": "T", "summary": "S.", "questions": [], "atoms": [], "project": None}


def answer(**fields):
    return {**BASE, **fields}


def test_a_clean_answer_passes_unchanged():
    atoms = [{"kind": "risk", "text": "Disk may fill."}]
    record = check_answer(answer(questions=["Why?"], atoms=atoms, project="shop"))
    assert (record.title, record.summary, record.questions, record.project) == ("T", "S.", ["Why?"], "shop")
    assert record.atoms == [{"kind": "risk", "text": "Disk may fill."}]


@pytest.mark.parametrize(("flat", "atom"), [
    ("error: ECONNREFUSED 127.0.0.1:5432", {"kind": "error", "text": "ECONNREFUSED 127.0.0.1:5432"}),
    ("Decision: keep SQLite", {"kind": "decision", "text": "keep SQLite"}),
    ("- fix: pin urllib3<2", {"kind": "fix", "text": "pin urllib3<2"}),
    ("[command] uv sync --frozen", {"kind": "command", "text": "uv sync --frozen"}),
    ("commands: make test", {"kind": "command", "text": "make test"}),
    ("KeyError: 'user_id'", {"kind": "fact", "text": "KeyError: 'user_id'"}),
    ("The cache is per process.", {"kind": "fact", "text": "The cache is per process."}),
])
def test_flattened_atoms_are_recovered(flat, atom):
    assert check_answer(answer(atoms=[flat])).atoms == [atom]


def test_unknown_kinds_become_fact_and_empty_atoms_are_dropped():
    atoms = [{"kind": "insight", "text": "x"}, {"kind": "ERROR", "text": " boom "}, {"kind": "fix", "text": "  "},
             {"type": "command", "content": "ls -la"}, {"text": "no kind"}, 42]
    assert check_answer(answer(atoms=atoms)).atoms == [
        {"kind": "fact", "text": "x"}, {"kind": "error", "text": "boom"},
        {"kind": "command", "text": "ls -la"}, {"kind": "fact", "text": "no kind"}]


def test_atoms_keep_their_line_breaks():
    trace = "Traceback (most recent call last):\n  File \"app.py\", line 3   \nValueError: bad"
    assert check_answer(answer(atoms=[{"kind": "error", "text": f"\n{trace}\n"}])).atoms[0]["text"] == \
        "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: bad"


def test_json_encoded_lists_are_decoded():
    record = check_answer(answer(questions='["A?", "B?"]', atoms='[{"kind": "fix", "text": "restart"}]'))
    assert record.questions == ["A?", "B?"]
    assert record.atoms == [{"kind": "fix", "text": "restart"}]


def test_a_bulleted_string_becomes_a_list():
    questions = "1. Why A?\n2) Why B?\n- Why C?\n"
    assert check_answer(answer(questions=questions)).questions == ["Why A?", "Why B?", "Why C?"]


def test_whitespace_is_trimmed_and_questions_are_cut_to_six():
    record = check_answer(answer(title="\n  A   title ", summary=" One.\n\nTwo. ",
                                 questions=[f" Q{n}? " for n in range(9)] + [""]))
    assert (record.title, record.summary) == ("A title", "One. Two.")
    assert record.questions == ["Q0?", "Q1?", "Q2?", "Q3?", "Q4?", "Q5?"]


@pytest.mark.parametrize("missing", [{"title": ""}, {"title": None}, {"summary": "   "}, {"title": ["T"]}])
def test_without_a_title_or_summary_the_answer_is_an_error(missing):
    with pytest.raises(SummaryError) as caught:
        check_answer(answer(**missing))
    assert caught.value.retryable is False


def test_an_answer_that_is_not_an_object_is_an_error():
    for data in (None, [BASE], "no json here", 3):
        with pytest.raises(SummaryError, match="not a JSON object"):
            check_answer(data)


def test_a_record_nested_one_level_down_is_unwrapped():
    assert check_answer({"record_summary": answer(title="Nested")}).title == "Nested"


@pytest.mark.parametrize(("value", "slug"), [
    ("shop-site", "shop-site"), ("Shop Site", "shop-site"), (" jezero ", "jezero"), ("null", None), ("", None),
    (None, None), ("../etc", None), ("café", None), (42, None),
])
def test_projects_are_normalised_to_slugs(value, slug):
    assert normalise_project(value) == slug


@pytest.mark.parametrize("text", [
    '{"title": "T"}',
    'Sure!\n```json\n{"title": "T"}\n```\nAnything else?',
    'Here: {"note": 1} and the record {"title": "T", "x": {"y": 2}} done',
])
def test_the_json_object_is_found_in_prose_and_fences(text):
    assert extract_json_object(text)["title"] == "T"
