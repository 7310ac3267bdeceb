"""An upgrade from the first release (docs/design.md "Upgrades and migrations"): a data folder whose library was made at the
first release's schema (migrations up to 0006, items as that release stored them: the row and
its `items_fts` row), with items from real transcripts, is migrated to today by `jezero
migrate`; then `jezero check` is clean, every item is found by a word of what was said and by
a word of its title, nothing is lost, a user of then still reads everything, and migrating
again does nothing."""

import hashlib
import json
import os
import re
import sqlite3  # the bundled SQLite, swapped in by jezero_site (loaded by pytest-django)
import subprocess
import sys
from pathlib import PurePosixPath

from connectors import registry
from tests.conftest import real_fixture
from tests.e2e.conftest import JEZERO

FIRST_RELEASE = "0006_jobs"   # the library's last migration of the first release (2026-11-29)
LATER_TABLES = ("items_original_fts", "items_words", "items_vectors", "item_changes", "people", "tombstones")
# Real public transcripts (tests/fixtures/real/SOURCES.md), one item each.
TRANSCRIPTS = (("claude_code", "claude_7.jsonl"), ("claude_code", "claude_6.jsonl"), ("claude_code", "claude_3.jsonl"),
               ("specstory", "specstory_1.md"), ("specstory", "specstory_6.md"))
WORD = re.compile(r"[A-Za-z]{5,}")

# Migrates a new database to the first release's schema: the library to FIRST_RELEASE, every
# other app to today's (the users' table as Django makes it). Through the executor, as
# `migrate` would, but without its post-migrate signal: that runs today's `store.ensure_index`,
# which would add today's tables to an empty library.
FIRST_RELEASE_SCHEMA = """
import jezero_site, django
django.setup()
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
executor = MigrationExecutor(connection)
others = [node for node in executor.loader.graph.leaf_nodes() if node[0] != "library"]
executor.migrate([("library", "%s"), *others])
""" % FIRST_RELEASE

# Searches the upgraded library in its own process, as every adapter does: library.search.search.
SEARCH = """
import json, sys
import jezero_site, django
django.setup()
from library.search import ALL_SOURCES, search
found = {}
for query in json.loads(sys.argv[1]):
    fused = search(query, allowed_sources=ALL_SOURCES, limit=3)
    records = search(query, allowed_sources=ALL_SOURCES, limit=3, records_only=True)
    found[query] = {"fused": [[hit.key, list(hit.matched_in)] for hit in fused.hits],
                    "records": [hit.key for hit in records.hits]}
print(json.dumps(found))
"""


def first_line(text, limit):
    return text.strip().splitlines()[0][:limit]


def item_from(kind, name, number):
    """An item shaped as the first release's pipeline stored one: the transcript's text as its
    original ("role: text" lines), a record (title, summary, questions, atoms) drawn from it."""
    connector, unit = registry.for_file(kind, real_fixture(name))
    reading = connector.read(unit)
    said = [entry for entry in reading.entries if entry.text.strip()]
    asked = next((entry.text for entry in said if entry.role == "user"), said[0].text)   # a sub-agent's: none
    answers = [entry.text for entry in said if entry.role == "assistant"]
    cwd = reading.hints.get("cwd")
    return {
        "id": number, "key": f"agent-laptop:{unit.id}", "source": "agent-laptop", "original_ref": str(unit.ref),
        "title": reading.hints.get("title_hint") or first_line(asked, 80),
        "summary": first_line(answers[0], 200),
        "questions": [first_line(asked, 120)],
        "atoms": [{"kind": "fact", "text": first_line(answers[-1], 160)}],
        "project": PurePosixPath(cwd).name if cwd else None,
        "occurred_at": f"2026-11-{10 + number:02d} 09:30:00",
        "original": "\n".join(f"{entry.role}: {entry.text}" for entry in said),
    }


def first_release_items():
    """Five items from real transcripts and one record without an original (an imported
    record, say: its vectors are made from its record)."""
    items = [item_from(kind, name, number) for number, (kind, name) in enumerate(TRANSCRIPTS, start=1)]
    items.append({"id": 6, "key": "demo:ledger", "source": "demo", "original_ref": "", "project": "household",
                  "title": "Reconciled the household ledger", "summary": "Matched the quarterly statements.",
                  "questions": ["Why did the ledger not balance?"], "atoms": [], "original": "",
                  "occurred_at": "2026-11-20 18:00:00"})
    return items


def store_first_release(database, items):
    """Write `items` as the first release did: each row, its `items_fts` row (questions and
    atoms' texts joined by newlines, no project as ""), and the tokenizer it recorded in
    store_state; and a user of that release."""
    with sqlite3.connect(database) as db:
        for item in items:
            db.execute(
                "INSERT INTO items (id, key, source, original_ref, title, summary, questions, atoms, project, trust, "
                "occurred_at, ingested_at, updated_at, text_hash, original, hints, summarizer, input_tokens, "
                "output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'own', ?, ?, ?, ?, ?, '{}', 'extractive', 0, 0)",
                [item["id"], item["key"], item["source"], item["original_ref"], item["title"], item["summary"],
                 json.dumps(item["questions"]), json.dumps(item["atoms"]), item["project"], item["occurred_at"],
                 item["occurred_at"], item["occurred_at"],
                 hashlib.sha256(item["original"].encode()).hexdigest(), item["original"]])
            db.execute("INSERT INTO items_fts (rowid, title, summary, questions, atoms, project) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       [item["id"], item["title"], item["summary"], "\n".join(item["questions"]),
                        "\n".join(atom["text"] for atom in item["atoms"]), item["project"] or ""])
        db.execute("INSERT INTO store_state (key, value) VALUES ('fts_tokenizer', 'trigram remove_diacritics 1')")
        db.execute("INSERT INTO auth_user (password, last_login, is_superuser, username, first_name, last_name, "
                   "email, is_staff, is_active, date_joined) "
                   "VALUES ('!', NULL, 0, 'tomas', '', '', '', 0, 1, '2026-11-29 21:00:00')")


def words(text):
    return {word.lower() for word in WORD.findall(text)}


def record_text(item):
    return " ".join([item["title"], item["summary"], *item["questions"], *(atom["text"] for atom in item["atoms"]),
                     item["project"] or ""])


def distinctive(items, item, text, unlike=""):
    """A word of `text` that no other item holds anywhere, nor `unlike`: found, it can only be
    this item, and through that text."""
    elsewhere = set().union(*(words(f"{record_text(other)} {other['original']}") for other in items
                              if other is not item), words(unlike))
    return sorted(words(text) - elsewhere)[0]


def test_a_first_release_library_upgrades_to_today_with_every_item_found(tmp_path):
    """`jezero migrate` takes a library of the first release to today: check clean, every item
    found by what was said and by its title, the counts kept, nothing left to migrate."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp_path / "data"), JEZERO_SECRET_KEY="upgrade-test-secret-key",
               HOME=str(tmp_path / "home"), DJANGO_SETTINGS_MODULE="jezero_site.settings")

    def jezero(*args):
        proc = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    def python(script, *args):
        proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    (tmp_path / "data").mkdir()
    python(FIRST_RELEASE_SCHEMA)
    database = tmp_path / "data" / "jezero.sqlite3"
    with sqlite3.connect(database) as db:
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "items_fts" in names and not names.intersection(LATER_TABLES)
    items = first_release_items()
    store_first_release(database, items)

    upgrade = jezero("migrate")
    for label in ("original-text index", "record word index", "item vectors"):
        assert f"{label}: {len(items)}/{len(items)} items" in upgrade

    report = json.loads(jezero("check", "--json"))
    assert report["ok"] and report["problems"] == []
    counts = (report["items"], report["indexed"], report["original_index"]["rows"],
              report["record_word_index"]["rows"], report["item_vectors"]["rows"])
    assert counts == (len(items),) * 5
    assert "ok" in jezero("check").splitlines()

    said = {distinctive(items, item, item["original"], unlike=record_text(item)): item["key"]
            for item in items if item["original"]}
    titled = {distinctive(items, item, item["title"]): item["key"] for item in items}
    found = json.loads(python(SEARCH, json.dumps([*said, *titled])))
    for word, key in said.items():
        hits = found[word]["fused"]
        assert hits and hits[0][0] == key and "original" in hits[0][1], (word, hits)
    for word, key in titled.items():
        hits, records = found[word]["fused"], found[word]["records"]
        assert hits and hits[0][0] == key and "record" in hits[0][1], (word, hits)
        assert records and records[0] == key, (word, records)

    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM items").fetchone()[0] == len(items)
        assert db.execute("SELECT p.sources FROM people p JOIN auth_user u ON u.id = p.user_id "
                          "WHERE u.username = 'tomas'").fetchone() == ('["*"]',)
    assert "No migrations to apply" in jezero("migrate")
    assert json.loads(jezero("check", "--json"))["ok"]
