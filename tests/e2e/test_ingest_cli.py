"""Ingestion as a person runs it: `jezero preview`, `run`, `connector`, `retag`,
`redact-stored`, `resummarize`, and a run killed in the middle (a real SIGKILL)."""

import json
import os
import shutil
import signal
import sqlite3  # the bundled SQLite, swapped in by jezero_site (loaded by pytest-django)
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import wait_until

JEZERO = Path(sys.executable).with_name("jezero")
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)
CLAUDE_7 = "2b4ed4c0-b905-41de-9238-273db3ec737a"

# A stand-in for an agent CLI (`claude -p`): reads the prompt and prints a JSON record at
# once, except on call number argv[2]: that call says so (a file `held` in the folder argv[1])
# and hangs until the test releases it (a file `release`), then fails.
HOLDING_AGENT = """
import json, sys, time
from pathlib import Path
prompt = sys.stdin.read()
here, hold_at = Path(sys.argv[1]), int(sys.argv[2])
with open(here / "calls", "a") as calls:
    calls.write(".")
if (here / "calls").stat().st_size == hold_at:
    (here / "held").touch()
    deadline = time.monotonic() + 120   # should the test never release it
    while not (here / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(1)
print("```json")
print(json.dumps({"title": "Checked claude -p tools", "summary": "Looked at what claude -p can do. It works.",
                  "questions": ["Can claude -p use WebSearch?"], "atoms": [{"kind": "fact", "text": "claude -p works"}],
                  "project": None}))
print("```")
"""


def _old(path, seconds=2 * 86_400):
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def add_session(setup, fixture, session):
    path = setup.projects / f"{session}.jsonl"
    shutil.copyfile(SHARED / fixture, path)
    _old(path)
    return path


def test_preview_shows_blocks_and_segments_without_storing(setup):
    out = json.loads(setup("preview", "--type", "claude_code", str(SHARED / "claude_7.jsonl"),
                           "--max-input-chars", "1000", "--json").stdout)
    assert out["unit"]["hints"]["cwd"] == "/src/experiments/claude_p"
    assert out["blocks"][0]["role"] == "user" and "claude -p" in out["blocks"][0]["text"]
    assert set(out["segments"][0]) == {"id", "first_block", "last_block", "chars", "hash", "occurred_at",
                                       "title_hint", "text"}
    assert all(s["chars"] <= 1000 for s in out["segments"])
    assert json.loads(setup("timeline", "--json").stdout)["results"] == []
    bad = setup("preview", "--type", "claude_code", "/no/such.jsonl", ok=False)
    assert bad.returncode == 1 and "no such file" in bad.stderr


def test_run_search_reset_and_rerun(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    add_session(setup, "claude_6.jsonl", "03eb5929-52b3-4b13-ada3-b93ae35806b8")
    dry = json.loads(setup("run", "--dry-run", "--json").stdout)["runs"][0]
    assert dry["dry_run"] and dry["documents"] >= 2 and dry["model_calls"] == 0
    first = json.loads(setup("run", "--json").stdout)["runs"][0]
    assert first["units_stored"] == 2 and first["segments_summarised"] >= 2
    hits = json.loads(setup("search", "WebSearch", "--json").stdout)["results"]
    assert hits and hits[0]["source"] == "agent-laptop"
    listing = json.loads(setup("connector", "list", "--json").stdout)["connectors"][0]
    assert (listing["name"], listing["units_known"], listing["last_outcome"]) == ("agent-laptop", 2, "ok")
    assert "forgot 2 unit cursor(s)" in setup("connector", "reset", "agent-laptop").stdout
    again = json.loads(setup("run", "--json").stdout)["runs"][0]
    assert again["units_changed"] == 2 and again["model_calls"] == 0
    text = setup("run").stdout
    assert "agent-laptop: units seen 2, changed 0" in text


def test_maintenance_verbs_report_what_changed(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    setup("run")
    assert json.loads(setup("retag", "--json").stdout)["changed"] == 0
    setup.configure('project = "claude-tools"\n')
    retag = json.loads(setup("retag", "--json").stdout)
    assert retag["changed"] >= 1
    assert {r["project"] for r in json.loads(setup("timeline", "--json").stdout)["results"]} == {"claude-tools"}
    assert json.loads(setup("redact-stored", "--dry-run", "--json").stdout)["changed"] == 0
    again = json.loads(setup("resummarize", "--where", "summarizer=extractive", "--json").stdout)
    assert again["selected"] >= 1 and again["failed"] == 0
    bad = setup("resummarize", "--where", "colour=red", ok=False)
    assert bad.returncode == 1 and "--where" in bad.stderr


def test_redact_stored_applies_new_rules_to_stored_items(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    setup("run")
    setup.configure('\n[redaction]\nextra_patterns = [{kind = "tool-name", pattern = "WebSearch"}]\n')
    dry = json.loads(setup("redact-stored", "--dry-run", "--json").stdout)
    assert dry["changed"] >= 1
    done = json.loads(setup("redact-stored", "--json").stdout)
    assert done["changed"] == dry["changed"]
    assert json.loads(setup("search", "WebSearch", "--json").stdout)["results"] == []
    assert setup("check").returncode == 0


def test_a_run_without_a_model_refuses_with_what_to_set(setup):
    add_session(setup, "claude_7.jsonl", CLAUDE_7)
    (setup.data / "jezero.toml").write_text('[summarizer]\nprovider = "anthropic"\n')
    proc = setup("run", "--connector", "x", ok=False)
    assert proc.returncode == 1 and "no connector named 'x'" in proc.stderr
    setup.configure()
    with open(setup.data / "jezero.toml", "a") as fh:
        fh.write('\n[summarizer]\nprovider = "anthropic"\n')
    proc = setup("run", ok=False)
    assert proc.returncode == 1
    assert "summarizer.model must be set" in proc.stderr


def test_killing_a_run_leaves_no_partial_unit(setup):
    """SIGKILL in the middle of a run: every unit is stored whole with its cursor, or not at
    all; `jezero check` is clean; the next run finishes the rest."""
    sessions = [f"00000000-0000-4000-8000-00000000000{n}" for n in range(6)]
    for session in sessions:
        add_session(setup, "claude_6.jsonl", session)
    agent = setup.tmp / "agent.py"
    agent.write_text(HOLDING_AGENT)
    # claude_6 makes four segments at 2,000 characters and the calls run one at a time, in
    # order: the tenth call is the second segment of the third unit, which is then half done.
    setup.configure(f'\n[summarizer]\nprovider = "command"\nmodel = "fake"\nmax_concurrency = 1\n'
                    f'max_input_chars = 2000\ncommand = ["{sys.executable}", "{agent}", "{setup.tmp}", "10"]\n')
    proc = subprocess.Popen([str(JEZERO), "run"], env=setup.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = setup.data / "jezero.sqlite3"

    def stored():
        with sqlite3.connect(db, timeout=10) as conn:
            return conn.execute("SELECT count(*) FROM unit_cursors").fetchone()[0]

    try:
        wait_until(lambda: (setup.tmp / "held").exists() and stored() == 2, timeout=60,
                   what="two units stored and the run waiting on the third")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        (setup.tmp / "release").touch()   # the held agent, orphaned by the kill, ends
        proc.kill()
        proc.wait(timeout=10)
    assert stored() == 2

    with sqlite3.connect(db) as conn:
        cursors = {row[0] for row in conn.execute("SELECT unit_id FROM unit_cursors")}
        keys = [row[0] for row in conn.execute("SELECT key FROM items")]
    units_with_items = {key.split(":", 1)[1].rsplit("#", 1)[0] for key in keys}
    assert units_with_items == cursors                      # no unit has items without its cursor
    per_unit = {unit: sum(1 for k in keys if f":{unit}#" in k) for unit in units_with_items}
    assert len(set(per_unit.values())) == 1                 # each stored unit has all its segments
    assert setup("check").returncode == 0

    rest = json.loads(setup("run", "--json", timeout=300).stdout)["runs"][0]
    assert rest["units_stored"] == len(sessions) - len(cursors)
    assert setup("check").returncode == 0
