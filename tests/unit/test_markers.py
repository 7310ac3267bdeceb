"""The author's markers (library.ingest.markers): what a person writes to keep a span or a
whole session out of Jezero, read exactly as README says, and nothing else."""

from datetime import UTC, datetime

import pytest

from connectors.base import Entry, Reading
from library.ingest.markers import HIDDEN, apply, asks_to_skip, hide


@pytest.mark.parametrize("text, expected", [
    ("my pin is <private>4711</private>, ok", "my pin is [private], ok"),
    ("a <private>one</private> b <private>two</private> c", "a [private] b [private] c"),
    ("outer <private>x <private>inner</private> still hidden</private> shown", "outer [private] shown"),
    ("across <private>line one\nline two\n</private>lines", "across [private]lines"),
    ("unclosed <private>to the end\nof the block", "unclosed [private]"),
    ("nested unclosed <private>a <private>b</private> c", "nested unclosed [private]"),
    ("a stray </private> close is text", "a stray </private> close is text"),
    ("no markers at all", "no markers at all"),
])
def test_private_spans_are_hidden_nested_across_lines_and_to_the_end_when_unclosed(text, expected):
    assert hide(text)[0] == expected


@pytest.mark.parametrize("text", ["<Private>x</Private>", "< private >x</ private >", "<private x>y</private x>",
                                  "<PRIVATE>z</PRIVATE>", "&lt;private&gt;w&lt;/private&gt;"])
def test_other_spellings_are_plain_text(text):
    assert hide(text) == (text, 0)


@pytest.mark.parametrize("text", ["jezero: skip", "JEZERO: SKIP", "  Jezero:skip  ", "please\njezero: skip\nthanks",
                                  "first line\r\njezero: skip\r\n"])
def test_the_skip_line_is_found_alone_on_a_line_in_any_case(text):
    assert asks_to_skip(text)


@pytest.mark.parametrize("text", ["jezero: skip this one", "say jezero: skip", "jezero skip", "jezero: skipped",
                                  "`jezero: skip`", "jezero:: skip"])
def test_the_skip_line_inside_other_words_is_plain_text(text):
    assert not asks_to_skip(text)


def entry(role, text):
    return Entry(role=role, text=text, time=datetime(2026, 11, 1, tzinfo=UTC))


def test_a_skip_line_in_a_user_block_keeps_the_unit_out_and_carries_no_text():
    reading = Reading(entries=[entry("user", "fix the build"), entry("assistant", "done"),
                               entry("user", "secret client matter\njezero: skip")], hints={"cwd": "/src/app"})
    marked = apply(reading)
    assert marked.kept_out and marked.skip_block == 1
    assert marked.reading is None


def test_a_skip_line_written_by_the_assistant_or_a_tool_does_not_keep_the_unit_out():
    reading = Reading(entries=[entry("user", "what does the marker look like?"),
                               entry("assistant", "Write this line:\njezero: skip"), entry("tool", "jezero: skip")])
    marked = apply(reading)
    assert not marked.kept_out and marked.reading.entries == reading.entries


def test_spans_are_hidden_in_every_role_and_in_the_hints():
    reading = Reading(entries=[entry("user", "call <private>Dr. Okafor</private> tomorrow"),
                               entry("assistant", "noted <private>the diagnosis</private>")],
                      hints={"title_hint": "about <private>Dr. Okafor</private>", "cwd": "/home/u/notes"})
    marked = apply(reading)
    assert marked.hidden == 2
    assert [e.text for e in marked.reading.entries] == [f"call {HIDDEN} tomorrow", f"noted {HIDDEN}"]
    assert marked.reading.hints == {"title_hint": f"about {HIDDEN}", "cwd": "/home/u/notes"}
    assert apply(marked.reading).reading == marked.reading   # idempotent
