"""docs/design.md "Blocks and segments": rendering, middle truncation with the exact marker, greedy grouping, ids, times,
hashes, the growing-session property, and reading a rendering back into its blocks."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import Block, finish_blocks
from library.ingest.segments import parse_blocks, segment, shorten, text_hash

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Every file-based fixture folder, read as its connector type reads it.
FIXTURE_FOLDERS = [
    ("claude_code", "claude_code"), ("codex", "codex"), ("gemini_cli", "gemini_cli"), ("pi", "pi"),
    ("specstory", "specstory"), ("specstory", "sessions"), ("markdown", "markdown/board"),
]

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def blocks(*specs):
    return [Block(index=i, role=role, text=text, time=T0 + timedelta(minutes=i)) for i, (role, text) in enumerate(specs)]


def test_a_segment_renders_role_colon_text_separated_by_one_blank_line():
    (seg,) = segment("s1", blocks(("user", "fix the build"), ("tool", "Bash: make"), ("assistant", "done")), 1000)
    assert seg.text == "user: fix the build\n\ntool: Bash: make\n\nassistant: done"
    assert seg.hash == text_hash(seg.text)
    assert seg.id == "s1#0"


def test_a_long_block_is_cut_in_the_middle_with_the_exact_marker():
    text = "H" * 600 + "M" * 2000 + "T" * 600
    (short,) = [shorten(b, 1000) for b in blocks(("user", text))]
    rendered = f"user: {short.text}"
    assert len(rendered) == 1000
    head, rest = short.text.split("[... ", 1)
    number, tail = rest.split(" characters omitted ...]", 1)
    assert int(number) == len(text) - len(head) - len(tail)
    assert text.startswith(head) and text.endswith(tail)
    assert abs(len(head) - len(tail)) <= 1


def test_the_marker_width_is_accounted_for_exactly():
    """N may change digit count at the boundary; the rendered block never exceeds L."""
    for extra in range(1, 40):
        for limit in (1000, 1001, 1013):
            text = "x" * (limit + extra)
            (short,) = [shorten(b, limit) for b in blocks(("assistant", text))]
            assert len(f"assistant: {short.text}") <= limit
            n = int(short.text.split("[... ")[1].split(" ")[0])
            assert n == len(text) - (len(short.text) - len(f"[... {n} characters omitted ...]"))


def test_a_block_that_fits_is_untouched():
    (block,) = blocks(("user", "x" * 994))
    assert shorten(block, 1000) is block  # "user: " + 994 = 1000


def test_blocks_are_grouped_greedily_within_the_limit():
    specs = [("user", "a" * 394), ("assistant", "b" * 389), ("user", "c" * 394), ("assistant", "d" * 389)]
    segs = segment("s", blocks(*specs), 1000)
    # 400 + 2 + 400 = 802 fits; + 2 + 400 = 1204 does not.
    assert [[b.index for b in s.blocks] for s in segs] == [[0, 1], [2, 3]]
    assert [s.id for s in segs] == ["s#0", "s#2"]
    assert all(len(s.text) <= 1000 for s in segs)


def test_exactly_full_segment_is_kept():
    specs = [("user", "a" * 493), ("user", "b" * 493)]  # 499 + 2 + 499 = 1000
    assert len(segment("s", blocks(*specs), 1000)) == 1


def test_occurred_at_is_the_last_blocks_time():
    segs = segment("s", blocks(("user", "a" * 500), ("assistant", "b" * 500), ("user", "c")), 1000)
    assert segs[0].occurred_at == T0 + timedelta(minutes=0)
    assert segs[1].occurred_at == T0 + timedelta(minutes=2)


def test_part_n_of_m_is_in_the_title_hint_but_not_in_the_hash():
    segs = segment("s", blocks(("user", "a" * 700), ("user", "b" * 700)), 1000)
    assert [s.title_hint("Fix login") for s in segs] == ["Fix login (part 1/2)", "Fix login (part 2/2)"]
    assert "part" not in segs[0].text
    (single,) = segment("s", blocks(("user", "a")), 1000)
    assert single.title_hint("Fix login") == "Fix login"
    assert single.title_hint(None) is None


def test_a_growing_session_keeps_its_earlier_segments_byte_identical():
    specs = [("user" if i % 2 else "assistant", f"message {i} " + "w" * (150 + 37 * i % 400)) for i in range(60)]
    full = blocks(*specs)
    final = segment("s", full, 2000)
    for cut in range(1, len(full)):
        grown = segment("s", full[:cut], 2000)
        for early, later in zip(grown[:-1], final, strict=False):  # the grown one may be shorter
            assert (early.id, early.hash) == (later.id, later.hash)


@pytest.mark.parametrize("limit", [1000, 5000])
def test_no_segment_exceeds_the_limit(limit):
    specs = [("assistant", "z" * n) for n in (10, 5000, 20, 999, 30000, 3)]
    assert all(len(s.text) <= limit for s in segment("s", blocks(*specs), limit))


# -- parse_blocks: the inverse of rendering ----------------------------------------------------

def fixture_units():
    for ctype, folder in FIXTURE_FOLDERS:
        connector = registry.make(ctype, {"path": str(FIXTURES / folder)})
        for unit in connector.discover():
            yield f"{folder}:{unit.id}", finish_blocks(connector.read(unit).entries)


@pytest.mark.parametrize("limit", [60_000, 1_000])
def test_every_fixture_reads_back_into_the_blocks_it_was_rendered_from(limit):
    """Render the blocks the connectors produce for every fixture, parse the segment text
    back: the same roles and texts, in order (what `resummarize` relies on)."""
    seen = 0
    for name, blocks in fixture_units():
        for seg in segment(name, blocks, limit):
            assert parse_blocks(seg.text) == [(b.role, b.text) for b in seg.blocks], name
            seen += 1
    assert seen > 30


def test_a_paragraph_with_a_colon_stays_in_its_block():
    """A blank line followed by "Note: …" inside a block is text, not a new block with a
    made-up role."""
    (seg,) = segment("s1", blocks(
        ("user", "CI says:\n\nTest summary: total: 213, failed: 32"),
        ("assistant", "Two causes.\n\nFirst: the temp folder is full.\n\nSecond: names collide."),
        ("tool", "Bash: dotnet test"),
    ), 10_000)
    assert parse_blocks(seg.text) == [
        ("user", "CI says:\n\nTest summary: total: 213, failed: 32"),
        ("assistant", "Two causes.\n\nFirst: the temp folder is full.\n\nSecond: names collide."),
        ("tool", "Bash: dotnet test"),
    ]


def test_blocks_ending_in_newlines_and_empty_text_read_back_exactly():
    specs = [("user", "trailing newline\n"), ("assistant", ""), ("system", "\nleading"), ("tool", "Read: a.py")]
    (seg,) = segment("s1", blocks(*specs), 10_000)
    assert parse_blocks(seg.text) == specs


def test_text_that_was_never_rendered_is_one_user_block():
    assert parse_blocks("Buy stamps.\n\nCall the plumber.") == [("user", "Buy stamps.\n\nCall the plumber.")]
    assert parse_blocks("") == []
