"""The `jezero` command as a person runs it: a real process, a real data folder."""

import json
import os
import sqlite3  # the bundled SQLite, swapped in by jezero_site (loaded by pytest-django)
import subprocess
import sys
from pathlib import Path

import pytest

JEZERO = Path(sys.executable).with_name("jezero")
RECORDS = [
    {"key": "d1", "title": "Keep analytics behind the consent banner", "summary": "Decided to keep GA behind consent.",
     "questions": ["Do we keep Google Analytics?"], "atoms": [{"kind": "decision", "text": "keep GA behind consent"}],
     "project": "shop-site", "occurred_at": "2026-05-01T09:00:00Z"},
    {"key": "d2", "title": "Remove the analytics script from the shop", "summary": "Replaced GA with server-side counts.",
     "questions": ["Why was analytics removed?"], "atoms": [{"kind": "decision", "text": "remove analytics script"}],
     "project": "shop-site", "occurred_at": "2026-08-01T09:00:00Z"},
    {"key": "d3", "title": "Café menu migration", "summary": "Moved the café menu to the new database migration.",
     "project": "recipes", "occurred_at": "2026-07-01T09:00:00Z", "original": "user: move the menu"},
]


@pytest.fixture
def run(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env["JEZERO_DATA_DIR"] = str(tmp_path / "data")
    env["HOME"] = str(tmp_path / "home")  # init looks for ~/.claude and ~/.codex: keep the real ones out

    def run(*args, stdin=None, ok=True):
        proc = subprocess.run([str(JEZERO), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60)
        if ok is True:
            assert proc.returncode == 0, proc.stderr
        return proc

    run.env = env
    run.data = tmp_path / "data"
    return run


@pytest.fixture
def library(run, tmp_path):
    run("init")
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    run("import-jsonl", str(path), "--source", "agent-laptop")
    return run


def test_init_sets_up_a_data_folder_and_says_skipped_the_second_time(run):
    first = run("init").stdout
    assert "data folder" in first and "created" in first
    assert "admin user: created 'admin', password " in first
    assert (run.data / "jezero.toml").read_text().startswith("# Jezero configuration")
    assert oct((run.data / "secret_key").stat().st_mode & 0o777) == "0o600"
    second = run("init").stdout
    assert "created" not in second
    assert second.count("skipped") == 6  # static files are re-collected on every init


def test_commands_before_init_say_what_to_do(run):
    proc = run("search", "anything", ok=False)
    assert proc.returncode == 1
    assert "run `jezero init`" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_config_is_one_line_naming_the_key(run):
    run("init")
    (run.data / "jezero.toml").write_text("[search]\ncandidate_pool = 3\n")
    proc = run("search", "x", ok=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert "search.candidate_pool: 3 is out of range (allowed 10–5,000)" in proc.stderr


def test_a_database_that_cannot_be_opened_is_one_line_naming_it(library):
    """A folder in the database file's place (as a volume mounted on the wrong path leaves it):
    the driver cannot open it, and every command says so in one line; the process once died
    of a segmentation fault here (the connection's finalizer closed a connection never opened)."""
    database = library.data / "jezero.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        database.with_name(database.name + suffix).unlink(missing_ok=True)
    database.mkdir()
    for args in (("search", "café"), ("check",), ("timeline",)):
        proc = library(*args, ok=False)
        assert proc.returncode == 1, (args, proc.returncode, proc.stderr)
        assert proc.stderr.strip() == (f"jezero: cannot open the database {database}: it must be a file the user "
                                       "running jezero may read and write, in a folder it may write"), args


def test_search_json_has_the_query_the_match_and_the_rows(library):
    out = json.loads(library("search", "analytics", '"consent banner"', "--json").stdout)
    assert out["query"] == 'analytics "consent banner"'
    # "analytics" is in most records here: BM25 gives it (almost) no weight, but in a library this
    # small scoring it costs nothing, so it is not left out (it is, past ranking.COMMON items).
    assert out["match"] == '"analytics"* OR "consent banner"'
    assert [r["key"] for r in out["results"]][0] == "agent-laptop:d1"
    assert set(out["results"][0]) == {"id", "key", "title", "summary", "project", "source", "trust", "occurred_at", "score",
                                      "matched_in", "snippet"}
    assert out["original_match"] == "\"analytics\" OR \"consent banner\"" and out["records_only"] is False
    accents = json.loads(library("search", "cafe", "--json").stdout)
    assert [r["key"] for r in accents["results"]] == ["agent-laptop:d3"]


def test_search_filters_and_text_output(library):
    out = json.loads(library("search", "analytics", "--project", "recipes", "--json").stdout)
    assert out["results"] == []
    out = json.loads(library("search", "analytics", "--since", "2026-06-01", "--json").stdout)
    assert [r["key"] for r in out["results"]] == ["agent-laptop:d2"]
    text = library("search", "analytics", "--limit", "1").stdout
    hit, why = text.strip().splitlines()  # the result, then where it matched and the snippet
    assert hit.startswith("[") and "shop-site  agent-laptop" in hit
    assert why.strip().startswith(("[record]", "[record + meaning]")) and "analytics" in why


def test_show_later_and_newer(library):
    item = json.loads(library("show", "1", "--json").stdout)
    assert item["title"] == "Keep analytics behind the consent banner" and "original" not in item
    assert json.loads(library("show", "3", "--original", "--json").stdout)["original"] == "user: move the menu"
    later = json.loads(library("later", "1", "--query", "analytics", "--json").stdout)
    assert later["matched_by"] == "subject"
    assert [r["key"] for r in later["results"]] == ["agent-laptop:d2"]
    text = library("show", "1", "--newer").stdout
    assert "NEWER" in text and "Remove the analytics script from the shop" in text


def test_timeline_json(library):
    out = json.loads(library("timeline", "--json").stdout)
    assert [r["key"] for r in out["results"]] == ["agent-laptop:d2", "agent-laptop:d3", "agent-laptop:d1"]
    out = json.loads(library("timeline", "--since", "2026-05-01T09:00:00", "--until", "2026-07-01T09:00:00", "--json").stdout)
    assert [r["key"] for r in out["results"]] == ["agent-laptop:d1"]


def test_user_mistakes_are_one_line_with_exit_1_or_2(library):
    cases = [
        (("show", "99"), 1, "jezero show: item 99 not found"),
        (("search", "x", "--since", "soon"), 1, "since: 'soon' is not an ISO 8601"),
        (("show", "abc"), 2, "invalid int value"),
        (("search",), 2, "the following arguments are required: query"),
        (("frobnicate",), 2, "unknown command 'frobnicate'"),
        (("import-jsonl", "/no/such/file", "--source", "x"), 1, "No such file or directory"),
    ]
    for args, code, message in cases:
        proc = library(*args, ok=False)
        assert proc.returncode == code, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_import_with_a_bad_line_imports_nothing(library, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({**RECORDS[0], "key": "n1"}) + "\n" + '{"key": "n2"}\n')
    proc = library("import-jsonl", str(path), "--source", "agent-laptop", "--json", ok=False)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["imported"] == 0 and report["errors"][0]["line"] == 2
    assert json.loads(library("timeline", "--json").stdout)["results"].__len__() == 3


def test_export_import_round_trip_through_the_cli(library, tmp_path):
    exported = library("export-jsonl").stdout
    assert len(exported.splitlines()) == 3
    path = tmp_path / "again.jsonl"
    path.write_text(exported)
    out = json.loads(library("import-jsonl", str(path), "--source", "agent-laptop", "--json").stdout)
    assert out == {"imported": 0, "updated": 3, "forgotten": 0, "errors": []}
    assert library("export-jsonl").stdout == exported


def test_check_fails_on_a_damaged_index_and_reindex_repairs_it(library):
    assert library("check").stdout.strip().endswith("ok")
    db = sqlite3.connect(library.data / "jezero.sqlite3")
    db.execute("DELETE FROM items_fts WHERE rowid = 2")
    db.commit()
    db.close()
    proc = library("check", "--json", ok=False)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["missing"] == [2] and not report["ok"]
    assert "indexed 3 item(s)" in library("reindex").stdout
    assert json.loads(library("check", "--json").stdout)["ok"] is True


@pytest.mark.parametrize("table, label, only", [("items_original_fts", "original-text index", "original"),
                                               ("items_words", "record word index", "words")])
def test_check_sees_a_damaged_word_index_and_reindex_repairs_it(library, table, label, only):
    db = sqlite3.connect(library.data / "jezero.sqlite3")
    db.execute(f"DELETE FROM {table} WHERE rowid = 3")
    db.commit()
    db.close()
    proc = library("check", ok=False)
    assert f"items without a row in the {label}: 3" in proc.stdout
    assert f"{only} index" in library("reindex", "--only", only).stdout
    assert library("check").returncode == 0


def test_check_sees_missing_item_vectors_and_reindex_only_meaning_makes_them(library):
    assert "item vectors: 3  model: 'wordllama l2_supercat 256, chunks of 256 tokens'" in library("check").stdout
    db = sqlite3.connect(library.data / "jezero.sqlite3")
    db.execute("DELETE FROM items_vectors WHERE item_id = 3")
    db.commit()
    db.close()
    proc = library("check", ok=False)
    assert "items without vectors: 3; run `jezero reindex --only meaning`" in proc.stdout
    out = json.loads(library("reindex", "--only", "meaning", "--json").stdout)
    assert out["indexed"] == 3 and out["vectors_model"].startswith("wordllama") and out["tokenizers"] == {}
    assert library("check").returncode == 0


def test_optimize_merges_the_indexes_and_says_how_many_common_terms_have_postings(library):
    # Three items: no term is held by more than postings.POSTED of them, so none has postings.
    assert json.loads(library("optimize", "--json").stdout) | {"seconds": 0} == {
        "optimized": True, "seconds": 0, "common_terms": 0, "weightless_terms": 0, "changed_items": 0}
    assert "0 common term(s) have postings, 0 more weigh nothing; 0 changed item(s) folded in" in \
        library("optimize").stdout
    assert library("check").returncode == 0


def test_search_says_where_it_matched_and_records_only_keeps_to_the_records(library):
    """d3's record never says "the menu"; what was said does."""
    out = json.loads(library("search", "menu", "--json").stdout)
    top = out["results"][0]
    assert (top["key"], top["matched_in"]) == ("agent-laptop:d3", ["record", "original"])
    assert "move the menu" in top["snippet"]
    text = library("search", '"the menu"').stdout
    assert "Café menu migration" in text and "[original] user: move the menu" in text
    records = json.loads(library("search", '"the menu"', "--records-only", "--json").stdout)
    assert records["records_only"] is True and records["results"] == []


def test_a_tokenizer_change_needs_reindex(library):
    path = library.data / "jezero.toml"
    text = path.read_text()
    assert '# tokenizer = "trigram remove_diacritics 1"' in text  # as `jezero init` wrote it
    path.write_text(text.replace('# tokenizer = "trigram remove_diacritics 1"', 'tokenizer = "unicode61 remove_diacritics 2"'))
    proc = library("check", ok=False)
    assert "run `jezero reindex`" in proc.stdout
    library("reindex")
    assert library("check").returncode == 0
    assert json.loads(library("search", "cafe", "--json").stdout)["results"][0]["key"] == "agent-laptop:d3"


def test_django_commands_work_through_jezero(library):
    env = {**library.env, "DJANGO_SUPERUSER_PASSWORD": "a-long-enough-password-1"}
    proc = subprocess.run([str(JEZERO), "createsuperuser", "--noinput", "--username", "ana", "--email", "ana@example.org"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Superuser created" in proc.stdout
    assert "No migrations to apply" in library("migrate").stdout


def test_a_sqlite_without_the_tokenizer_fails_the_system_check(run):
    """With the bundled SQLite hidden, the interpreter's own (3.40 here) is used: the check
    says what is wrong and what to install."""
    run("init")
    code = ("import sys; sys.modules['pysqlite3'] = None; sys.modules['sqlean'] = None; "
            "from jezero_site.cli import main; sys.exit(main(['search', 'anything']))")
    proc = subprocess.run([sys.executable, "-c", code], env=run.env, capture_output=True, text=True, timeout=60)
    import sqlite3 as system_sqlite  # noqa: F401  (this process already has the bundled one)

    if proc.returncode == 0:
        pytest.skip("the interpreter's own SQLite already supports the tokenizer")
    assert "jezero.E001" in proc.stderr
    assert "pysqlite3-binary" in proc.stderr


def test_init_adds_connectors_for_local_agent_folders(run):
    (Path(run.env["HOME"]) / ".claude" / "projects").mkdir(parents=True)
    out = run("init").stdout
    assert "connector agent-claude-code: claude_code sessions in ~/.claude/projects" in out
    assert "agent-codex" not in out  # no ~/.codex/sessions here
    listing = json.loads(run("connector", "list", "--json").stdout)["connectors"]
    assert [(c["name"], c["type"]) for c in listing] == [("agent-claude-code", "claude_code")]
