"""Every file-based connector type end to end: `jezero run` with the `openai` provider
through the real SDK against a fake model server on loopback, and `jezero preview` on one
of its files. The hand-written fixtures mark every text a connector must drop with the word
NOISE: none of it may reach the model."""

import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from connectors import registry
from jezero_site.config import validate
from library.ingest import pipeline
from library.models import Item
from tests.fakes import hermes_db, opencode_db
from tests.fakes.model_server import ModelServer, anthropic_tool_reply
from tests.integration.conftest import RECORD

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FOLDERS = {
    "claude_code": "claude_code",
    "codex": "codex/sessions",
    "gemini_cli": "gemini_cli",
    "pi": "pi",
    "specstory": "specstory",
    "markdown": "markdown/board",
}


def _database(ctype, tmp_path):
    """A Hermes or OpenCode database with one working session, built the way the agent writes it."""
    if ctype == "hermes":
        db, fill = hermes_db.HermesDb(tmp_path / ".hermes" / "state.db"), hermes_db.a_working_session
    else:
        db, fill = opencode_db.OpenCodeDb(tmp_path / "opencode" / "opencode.db"), opencode_db.a_working_session
    fill(db)
    db.conn.close()
    return db.path


def _copy(ctype, tmp_path):
    if ctype in ("hermes", "opencode"):
        return _database(ctype, tmp_path)
    target = tmp_path / ctype
    shutil.copytree(FIXTURES / FOLDERS[ctype], target)
    old = time.time() - 2 * 86_400
    for root, _dirs, files in os.walk(target):
        for name in files:
            os.utime(Path(root) / name, (old, old))
    return target


@pytest.mark.parametrize("ctype", sorted(FOLDERS) + ["hermes", "opencode"])
def test_a_connector_runs_end_to_end_with_a_model_behind_the_real_sdk(ctype, tmp_path, settings, model):
    folder = _copy(ctype, tmp_path)
    settings.JEZERO = {
        **settings.JEZERO,
        **validate({
            "summarizer": {"provider": "openai", "model": "test-model", "base_url": model.url},
            "connectors": [{"name": f"src-{ctype.replace('_', '-')}", "type": ctype, "path": str(folder),
                            "settle_minutes": 0, "min_chars": 0}],
        }),
    }
    name = f"src-{ctype.replace('_', '-')}"
    report = pipeline.run(name)
    assert report.units_stored >= 1 and report.units_failed == 0, report.as_dict()
    assert report.model_calls == len(model.requests) == report.segments_summarised
    items = Item.objects.filter(source=name)
    assert items.count() == report.segments_summarised
    assert {item.summarizer for item in items} == {"openai:test-model"}
    assert {item.trust for item in items} == {"own"}
    sent = json.dumps([request.body for request in model.requests])
    assert "NOISE" not in sent
    assert "NOISE" not in json.dumps([item.original for item in items])
    again = pipeline.run(name)
    assert again.model_calls == 0 and again.units_changed == 0


def test_the_anthropic_provider_end_to_end_through_the_pipeline(tmp_path, settings, monkeypatch):
    server = ModelServer().start()
    try:
        server.script(*[anthropic_tool_reply(RECORD) for _ in range(50)])
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-real")
        folder = _copy("claude_code", tmp_path)
        settings.JEZERO = {**settings.JEZERO, **validate({
            "summarizer": {"provider": "anthropic", "model": "claude-haiku-4-5", "base_url": server.url},
            "connectors": [{"name": "agent-laptop", "type": "claude_code", "path": str(folder), "settle_minutes": 0}],
        })}
        report = pipeline.run("agent-laptop")
        assert report.units_stored >= 1 and report.model_calls == len(server.requests)
        assert {i.summarizer for i in Item.objects.all()} == {"anthropic:claude-haiku-4-5"}
        assert report.input_tokens == 1200 * report.model_calls
        assert all(r.body["tool_choice"] == {"type": "tool", "name": "record_summary"} for r in server.requests)
    finally:
        server.stop()


@pytest.mark.parametrize("ctype", sorted(FOLDERS))
def test_preview_reads_one_file_of_each_type(ctype, tmp_path):
    folder = _copy(ctype, tmp_path)
    unit = next(iter(registry.make(ctype, {"path": str(folder)}).discover()))
    out = io.StringIO()
    call_command("preview", unit.path, type=ctype, json=True, stdout=out)
    preview = json.loads(out.getvalue())
    assert preview["blocks"] and preview["segments"]
    assert all(segment["hash"] and segment["chars"] <= 60_000 for segment in preview["segments"])
    assert "NOISE" not in out.getvalue()
