"""Re-summarising (docs/design.md "Re-summarising"), with the extractive summariser: `jezero resummarize
--where summarizer=extractive` gives items that an older extractive summariser wrote the new
records, from their stored original, keeping their ids — and the original is read back into
exactly the blocks it was rendered from."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from connectors import registry
from connectors.base import finish_blocks
from library.ingest import maintenance
from library.ingest.segments import segment
from library.models import Item
from tests.conftest import make_item

pytestmark = pytest.mark.django_db

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
OLD_RECORD = {
    "summary": "The session started with this request: PS C:\\Users\\marta\\src\\tide-app> npm run build. "
               "It ended with: I added a `npm run build` step.",
    "questions": ["How was this handled: PS C:\\Users\\marta\\src\\tide-app> npm run build?",
                  "What was the outcome of: PS C:\\Users\\marta\\src\\tide-app> npm run build?"],
    "atoms": [{"kind": "error", "text": "the build worked yesterday, why can't vite find TideChart.vue now?"}],
    "summarizer": "extractive",
}


def stored(name, **fields):
    """An item as the old extractive summariser stored it: the session's one segment as its
    original, the hints the connector gave, an old-style record."""
    connector, unit = registry.for_file("specstory", SESSIONS / name)
    reading = connector.read(unit)
    (seg,) = segment(unit.id, finish_blocks(reading.entries), 60_000)
    item = make_item(key=f"agent-cursor:{seg.id}", source="agent-cursor", original=seg.text,
                     text_hash=seg.hash, hints=dict(reading.hints), **{**OLD_RECORD, **fields})
    return item, seg


def test_resummarize_gives_old_extractive_items_the_new_records_in_place():
    prompt, _ = stored("shell-prompt-first.md", title="PS C:\\Users\\marta\\src\\tide-app> npm run build")
    pasted, _ = stored("321_test-failures-due-to-temporary-directory-issues.md", title="Restore complete (0.6s)")
    other = make_item(title="Garden watering schedule", summarizer="anthropic:claude-haiku-4-5",
                      original="user: water the tomatoes")

    out = io.StringIO()
    call_command("resummarize", "--where", "summarizer=extractive", stdout=out)
    assert "selected 2, summarised 2, failed 0" in out.getvalue()

    prompt.refresh_from_db()
    assert prompt.title == "The build worked yesterday, why can't vite find TideChart.vue now?"
    assert prompt.questions[:2] == ["The build worked yesterday, why can't vite find TideChart.vue now?",
                                    "How to add a check so a wrong import case fails in CI on Linux too?"]
    assert prompt.summary.startswith("The build worked yesterday") and "session started" not in prompt.summary
    assert {"kind": "command", "text": "npm run build"} in prompt.atoms
    assert prompt.summarizer == "extractive" and prompt.key == "agent-cursor:5a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d#0"

    pasted.refresh_from_db()
    assert pasted.title == "Test failures due to temporary directory issues"      # the export's own title
    assert pasted.questions[0] == (
        "How to fix “System.IO.IOException: Unable to create a unique temporary directory after 100 attempts.”?")
    assert len(pasted.questions) == 3  # filled from what the session holds, not from the title
    assert Item.objects.filter(summarizer="extractive").count() == 2 and Item.objects.count() == 3
    assert Item.objects.get(pk=other.pk).title == "Garden watering schedule"


def test_the_stored_original_is_read_back_into_its_own_blocks():
    """The user pasted "…\\n\\nTest summary: total: 213, …": that stays in the user's block
    instead of becoming a block with the role "Test summary"."""
    item, seg = stored("321_test-failures-due-to-temporary-directory-issues.md", title="Old")
    request = maintenance._request(item)
    assert request.blocks == tuple((b.role, b.text) for b in seg.blocks)
    assert {role for role, _text in request.blocks} <= {"user", "assistant", "tool", "system"}
    assert request.title_hint == "Test failures due to temporary directory issues"
