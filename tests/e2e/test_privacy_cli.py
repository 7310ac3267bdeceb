"""Forget for good, as a person does it with the CLI on a real data folder: the forgotten
session's text is gone from the database file's bytes (and from a backup made afterwards),
does not come back after `jezero connector reset` and a new run, and comes back only when
the tombstone is lifted. Bad asks change nothing and exit 1."""

import json
from pathlib import Path

from tests.e2e.test_ingest_cli import CLAUDE_7, _old, add_session

CLAUDE_6 = "03eb5929-52b3-4b13-ada3-b93ae35806b8"
PHRASE = b"Especially the Task with Haiku model"   # claude_7's first prompt; in no other fixture


def file_bytes(data):
    """The library's database file and whatever its write-ahead log holds."""
    return b"".join(path.read_bytes() for path in sorted(Path(data).glob("jezero.sqlite3*")))


def items(setup):
    return json.loads(setup("timeline", "--limit", "50", "--json").stdout)["results"]


def test_a_forgotten_session_is_gone_from_the_file_and_does_not_come_back(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    add_session(setup, "claude_6.jsonl", CLAUDE_6)
    assert json.loads(setup("run", "--json").stdout)["runs"][0]["units_stored"] == 2
    before = items(setup)
    mine = [hit for hit in before if CLAUDE_7 in json.loads(setup("show", str(hit["id"]), "--json").stdout)["key"]]
    others = [hit["id"] for hit in before if hit not in mine]
    assert mine and others
    assert PHRASE in file_bytes(setup.data)

    dry = json.loads(setup("forget", "--ids", str(mine[0]["id"]), "--dry-run", "--json").stdout)
    assert (dry["units"], dry["items"], dry["sources"]) == (1, len(mine), ["agent-laptop"])
    assert len(items(setup)) == len(before)

    done = setup("forget", "--ids", str(mine[0]["id"]))
    assert f"forgot {len(mine)} item(s) of 1 unit(s)" in done.stdout
    assert [hit["id"] for hit in items(setup)] == others
    assert PHRASE not in file_bytes(setup.data)
    assert json.loads(setup("search", "Haiku WebSearch", "--json").stdout)["results"] == [] or all(
        hit["id"] in others for hit in json.loads(setup("search", "Haiku WebSearch", "--json").stdout)["results"])
    assert "ok" in setup("check").stdout
    backup = setup.tmp / "after.sqlite3"
    setup("backup", str(backup))
    assert PHRASE not in backup.read_bytes()

    setup("connector", "reset", "agent-laptop")
    again = json.loads(setup("run", "--json").stdout)["runs"][0]
    assert again["units_forgotten"] == 1 and again["model_calls"] == 0
    assert [hit["id"] for hit in items(setup)] == others
    assert PHRASE not in file_bytes(setup.data)
    assert f"agent-laptop:{CLAUDE_7}" in setup("forget", "--list").stdout

    setup("forget", "--undo", "--unit", f"agent-laptop:{CLAUDE_7}")
    back = json.loads(setup("run", "--json").stdout)["runs"][0]
    assert back["units_stored"] == 1 and len(items(setup)) == len(before)


def test_a_forget_that_matches_nothing_says_so_exits_1_and_changes_nothing(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    setup("run")
    count = len(items(setup))
    for args, said in ((["--source", "no-such-source"], "nothing to forget"),
                       (["--project", "no-such-project"], "nothing to forget"),
                       (["--unit", "agent-laptop:no-such-session"], "nothing to forget"),
                       (["--ids", "999999"], "no item 999999"),
                       (["--ids", "one,two"], "not a comma-separated list"),
                       (["--unit", "no-colon"], "is not SOURCE:UNIT"),
                       (["--undo", "--unit", "agent-laptop:never-forgotten"], "is not forgotten"),
                       ([], "exactly one of")):
        proc = setup("forget", *args, ok=False)
        assert proc.returncode == 1 and said in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    assert len(items(setup)) == count
    assert "nothing is forgotten" in setup("forget", "--list").stdout


def test_forgetting_a_project_never_touches_another_source(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    setup("run")
    project = items(setup)[0]["project"]
    records = setup.tmp / "records.jsonl"
    records.write_text(json.dumps({"key": "note-1", "title": "Imported note", "summary": "Kept.",
                                   "project": project, "occurred_at": "2026-11-01T10:00:00Z"}) + "\n")
    setup("import-jsonl", str(records), "--source", "mail-home")
    out = json.loads(setup("forget", "--source", "agent-laptop", "--json").stdout)
    assert out["sources"] == ["agent-laptop"] and out["items"] >= 1
    left = items(setup)
    assert [hit["source"] for hit in left] == ["mail-home"]
    again = setup.tmp / "again.jsonl"   # a forgotten unit's record, offered again by an import
    again.write_text(json.dumps({"key": f"{CLAUDE_7}#0", "title": "Back?", "summary": "No.",
                                 "occurred_at": "2026-11-01T10:00:00Z"}) + "\n")
    out = setup("import-jsonl", str(again), "--source", "agent-laptop").stdout
    assert "imported 0, updated 0, left out 1 of forgotten units" in out
    assert [hit["source"] for hit in items(setup)] == ["mail-home"]


def test_a_private_span_reaches_no_file_of_the_data_folder_nor_a_backup(setup):
    path = add_session(setup, "claude_7.jsonl", CLAUDE_7)
    raw = path.read_text()
    assert raw.count("Summarize the findings.") == 1
    path.write_text(raw.replace("Summarize the findings.",
                                "Summarize the findings. <private>Quokkavelt-Harrowgate 7731</private>"))
    _old(path)
    add_session(setup, "claude_6.jsonl", CLAUDE_6)
    preview = setup("preview", "--type", "claude_code", str(path)).stdout
    assert "1 private span(s) hidden as [private]" in preview and "Quokkavelt" not in preview

    run = setup("run", "--json")

    assert json.loads(run.stdout)["runs"][0]["units_stored"] == 2
    assert "Quokkavelt" not in run.stdout + run.stderr
    setup("backup", str(setup.tmp / "backup.sqlite3"))
    files = [p for p in Path(setup.data).rglob("*") if p.is_file()] + [setup.tmp / "backup.sqlite3"]
    assert any(p.name == "huey.sqlite3" for p in files)
    assert [p.name for p in files if b"Quokkavelt" in p.read_bytes()] == []
    assert b"findings. [private]" in file_bytes(setup.data)   # short: a long phrase may straddle two pages
