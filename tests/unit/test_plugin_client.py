"""The plugins' shared client (plugins/claude-code/hooks/jezero_client.py) and the Codex
rollout lookup, in-process: configuration, per-session state, upload planning, git facts."""

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def _load(name, path):
    """The module at `path`, imported under `name` without leaving it (or the folder the Codex
    programs add to sys.path) behind for other test modules: jezero_client is a common name."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    saved_path, previous = list(sys.path), sys.modules.get("jezero_client")
    sys.modules["jezero_client"] = client if name != "jezero_client" else module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved_path
        if previous is None:
            del sys.modules["jezero_client"]
        else:
            sys.modules["jezero_client"] = previous
    return module


client = _load("jezero_client", PLUGINS / "claude-code" / "hooks" / "jezero_client.py")
notify = _load("jezero_notify", PLUGINS / "codex" / "jezero_notify.py")


@pytest.fixture(autouse=True)
def _client_module(monkeypatch):
    """jezero_notify imports jezero_client by name when it runs: this one, for each test only."""
    monkeypatch.setitem(sys.modules, "jezero_client", client)


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "JEZERO_PLUGIN_STATE": str(tmp_path / "state")}


@pytest.fixture(autouse=True)
def _home(monkeypatch, tmp_path):
    """`~` resolves through HOME; keep the real one out of every test."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "JEZERO_URL", "JEZERO_TOKEN", "JEZERO_PLUGIN_CONFIG",
                 "JEZERO_PLUGIN_STATE"):
        monkeypatch.delenv(name, raising=False)


def write_config(path, **values):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values))
    return path


# --- configuration ---------------------------------------------------------------------------

def test_environment_variables_configure_the_client(env):
    """JEZERO_URL and JEZERO_TOKEN alone are a complete configuration."""
    config = client.load_config({**env, "JEZERO_URL": "http://127.0.0.1:8000/", "JEZERO_TOKEN": "tok-1"})
    assert (config.url, config.token) == ("http://127.0.0.1:8000", "tok-1")


def test_the_config_file_is_used_when_the_environment_says_nothing(env, tmp_path):
    """~/.config/jezero/plugin.json supplies url and token."""
    write_config(tmp_path / "home" / ".config" / "jezero" / "plugin.json", url="https://lib.example", token="tok-2")
    config = client.load_config(env)
    assert (config.url, config.token) == ("https://lib.example", "tok-2")


def test_each_key_comes_from_the_environment_first_then_the_file(env, tmp_path):
    """A URL in the environment and the token in the file (kept out of the environment) work together."""
    write_config(tmp_path / "home" / ".config" / "jezero" / "plugin.json", url="https://file.example", token="tok-file")
    config = client.load_config({**env, "JEZERO_URL": "https://env.example"})
    assert (config.url, config.token) == ("https://env.example", "tok-file")


def test_the_config_path_can_be_moved(env, tmp_path):
    """JEZERO_PLUGIN_CONFIG names another file; XDG_CONFIG_HOME moves the default one."""
    other = write_config(tmp_path / "elsewhere.json", url="https://a.example", token="t")
    assert client.load_config({**env, "JEZERO_PLUGIN_CONFIG": str(other)}).url == "https://a.example"
    write_config(tmp_path / "xdg" / "jezero" / "plugin.json", url="https://b.example", token="t")
    assert client.load_config({**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}).url == "https://b.example"


@pytest.mark.parametrize("content", [None, "{not json", '["a list"]', '{"url": "https://x.example"}',
                                     '{"url": "x.example", "token": "t"}', '{"url": "https://x.example", "token": "a b"}'])
def test_a_missing_or_unusable_configuration_switches_the_plugin_off(env, tmp_path, content):
    """No file, bad JSON, no token, a URL without a scheme: load_config returns None, never raises."""
    if content is not None:
        path = tmp_path / "home" / ".config" / "jezero" / "plugin.json"
        path.parent.mkdir(parents=True)
        path.write_text(content)
    assert client.load_config(env) is None


def test_a_pasted_mcp_address_is_taken_as_the_server_address(env):
    """`https://host/mcp/` → `https://host`: the API routes are beside /mcp."""
    config = client.load_config({**env, "JEZERO_URL": "https://lib.example/mcp/", "JEZERO_TOKEN": "t"})
    assert config.url == "https://lib.example"


def test_the_token_never_shows_in_the_config_repr(env):
    """A traceback that prints the config does not print the token."""
    config = client.load_config({**env, "JEZERO_URL": "https://x.example", "JEZERO_TOKEN": "secret-token-123"})
    assert "secret-token-123" not in repr(config)


# --- state -------------------------------------------------------------------------------------

def test_state_lives_in_the_cache_folder_by_default(tmp_path):
    """Without JEZERO_PLUGIN_STATE the state is ~/.cache/jezero/plugin/<session id>.json."""
    path = client.state_file("abc-123", {"HOME": str(tmp_path / "home")})
    assert path == str(tmp_path / "home" / ".cache" / "jezero" / "plugin" / "abc-123.json")


def test_a_session_id_that_is_not_a_file_name_is_hashed(env):
    """An id such as ../../etc cannot escape the state folder."""
    path = client.state_file("../../etc/passwd", env)
    assert os.path.dirname(path) == env["JEZERO_PLUGIN_STATE"]
    assert "passwd" not in path


def test_state_updates_merge_and_leave_no_temporary_files(env):
    """update_state keeps earlier keys and writes the file atomically."""
    client.update_state("s1", env, first_prompt_at=1.0)
    client.update_state("s1", env, upload_started_at=2.0)
    assert client.read_state("s1", env) == {"first_prompt_at": 1.0, "upload_started_at": 2.0}
    assert os.listdir(env["JEZERO_PLUGIN_STATE"]) == ["s1.json"]


def test_an_unreadable_state_is_an_empty_one(env):
    """A truncated state file reads as {} (the session starts over), not as an error."""
    Path(env["JEZERO_PLUGIN_STATE"]).mkdir()
    Path(client.state_file("s1", env)).write_text('{"first_pro')
    assert client.read_state("s1", env) == {}


def test_old_state_files_are_pruned(env):
    """State untouched for more than 30 days is removed; recent state stays."""
    client.update_state("old", env, first_prompt_at=1.0)
    client.update_state("new", env, first_prompt_at=1.0)
    month_ago = time.time() - 31 * 24 * 3600
    os.utime(client.state_file("old", env), (month_ago, month_ago))
    assert client.prune_states(env) == 1
    assert os.listdir(env["JEZERO_PLUGIN_STATE"]) == ["new.json"]


# --- upload planning ---------------------------------------------------------------------------

NOW = 1_800_000_000.0


def test_the_first_upload_of_a_session_goes_now():
    """Nothing uploaded yet → upload now."""
    assert client.plan_upload({}, NOW, ended=False) == ("now", None)


def test_uploads_within_fifteen_minutes_are_deferred_to_the_end_of_the_window():
    """A second Stop 5 minutes after an upload schedules one upload at last + 15 min."""
    state = {"upload_started_at": NOW - 300}
    assert client.plan_upload(state, NOW, ended=False) == ("later", NOW - 300 + 900)


def test_only_one_upload_is_ever_pending():
    """While an upload is scheduled, further Stops in the window add nothing."""
    state = {"upload_started_at": NOW - 300, "upload_pending_at": NOW + 600}
    assert client.plan_upload(state, NOW, ended=False) == ("skip", None)


def test_after_fifteen_minutes_the_next_upload_goes_now():
    """The window is over → upload now (and the pending one is superseded)."""
    state = {"upload_started_at": NOW - 900, "upload_pending_at": NOW}
    assert client.plan_upload(state, NOW, ended=False) == ("now", None)


def test_a_session_end_always_uploads():
    """SessionEnd ignores the throttle."""
    state = {"upload_started_at": NOW - 1, "upload_pending_at": NOW + 899}
    assert client.plan_upload(state, NOW, ended=True) == ("now", None)


def test_request_upload_records_the_plan_and_starts_one_child(env, monkeypatch):
    """"now" marks the start and cancels any pending upload; "later" records when; "skip" starts nothing."""
    jobs = []
    monkeypatch.setattr(client, "spawn_uploader", jobs.append)
    assert client.request_upload("claude_code", "s1", "/t.jsonl", "/w", False, env=env, now=NOW) == "now"
    assert client.read_state("s1", env)["upload_started_at"] == NOW
    assert client.request_upload("claude_code", "s1", "/t.jsonl", "/w", False, env=env, now=NOW + 60) == "later"
    assert client.read_state("s1", env)["upload_pending_at"] == NOW + 900
    assert client.request_upload("claude_code", "s1", "/t.jsonl", "/w", False, env=env, now=NOW + 120) == "skip"
    assert client.request_upload("claude_code", "s1", "/t.jsonl", "/w", True, env=env, now=NOW + 180) == "now"
    assert client.read_state("s1", env)["upload_pending_at"] is None
    assert [(job["ended"], job.get("at"), job.get("delay")) for job in jobs] == [
        (False, None, client.SETTLE_SECONDS), (False, NOW + 900, None), (True, None, client.SETTLE_SECONDS)]


def test_a_scheduled_upload_gives_way_to_a_newer_one(env):
    """The sleeping child finds its slot taken (a SessionEnd uploaded meanwhile) and sends nothing."""
    env = {**env, "JEZERO_URL": "http://127.0.0.1:9", "JEZERO_TOKEN": "t"}
    client.update_state("s1", env, upload_started_at=NOW, upload_pending_at=None)
    job = {"agent": "codex", "session_id": "s1", "path": "/nowhere", "cwd": None, "ended": False, "at": NOW + 900}
    assert client.run_upload_job(job, env=env, sleep=lambda seconds: None) == "superseded"


def test_an_upload_waiting_for_the_transcript_to_settle_gives_way_to_a_later_one(env, monkeypatch):
    """Stop's upload waits two seconds; a SessionEnd upload started meanwhile (it reads the longer
    file) supersedes it: it sends nothing, so it can never arrive after the final one."""
    env = {**env, "JEZERO_URL": "http://127.0.0.1:9", "JEZERO_TOKEN": "t"}
    jobs = []
    monkeypatch.setattr(client, "spawn_uploader", jobs.append)
    client.request_upload("claude_code", "s1", "/nowhere", None, False, env=env, now=NOW)
    client.request_upload("claude_code", "s1", "/nowhere", None, True, settle=0.0, env=env, now=NOW + 1)
    stop_job, end_job = jobs
    assert (stop_job["started"], end_job["started"]) == (NOW, NOW + 1)
    assert client.run_upload_job(stop_job, env=env, sleep=lambda seconds: None) == "superseded"
    assert client.run_upload_job(end_job, env=env, sleep=lambda seconds: None) == "failed"  # it does go out


def test_a_scheduled_upload_of_an_unchanged_transcript_sends_nothing(env, tmp_path):
    """The transcript did not grow since the last upload: the scheduled upload is skipped."""
    env = {**env, "JEZERO_URL": "http://127.0.0.1:9", "JEZERO_TOKEN": "t"}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "user"}\n')
    stat = transcript.stat()
    client.update_state("s1", env, upload_pending_at=NOW, uploaded_fingerprint=[stat.st_size, stat.st_mtime_ns])
    job = {"agent": "codex", "session_id": "s1", "path": str(transcript), "cwd": None, "ended": False, "at": NOW}
    assert client.run_upload_job(job, env=env, sleep=lambda seconds: None) == "unchanged"


def test_a_failed_upload_is_recorded_without_secrets(env, tmp_path):
    """Server unreachable: the state and the log say so; neither holds the token."""
    env = {**env, "JEZERO_URL": "http://127.0.0.1:9", "JEZERO_TOKEN": "secret-token-xyz"}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "user", "message": "my private words"}\n')
    job = {"agent": "claude_code", "session_id": "s1", "path": str(transcript), "cwd": None, "ended": True}
    assert client.run_upload_job(job, env=env, sleep=lambda seconds: None) == "failed"
    assert client.read_state("s1", env)["last_upload"]["error"].startswith("unreachable")
    log = (Path(env["JEZERO_PLUGIN_STATE"]) / "plugin.log").read_text()
    assert "session=s1 failed: unreachable" in log
    assert "secret-token-xyz" not in log and "private" not in log


# --- git ---------------------------------------------------------------------------------------

def make_repo(root, branch="main", remote="https://ana:ghp_secret@github.com/ana/shop-site.git"):
    git = root / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (git / "config").write_text(
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://example.com/up.git\n'
        f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n')
    return git


def test_git_branch_and_origin_are_read_from_the_files_above_cwd(tmp_path):
    """From a subfolder: the branch from HEAD, origin's URL without its credentials."""
    make_repo(tmp_path / "shop-site", branch="feature/cart")
    (tmp_path / "shop-site" / "src").mkdir()
    assert client.git_info(str(tmp_path / "shop-site" / "src")) == ("feature/cart", "https://github.com/ana/shop-site.git")


def test_a_worktree_reads_its_own_head_and_the_main_config(tmp_path):
    """`.git` as a file (worktree): HEAD from its gitdir, remotes from the common dir."""
    git = make_repo(tmp_path / "main", remote="git@github.com:ana/shop-site.git")
    worktree_git = git / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/fix\n")
    (worktree_git / "commondir").write_text("../..\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert client.git_info(str(tmp_path / "wt")) == ("fix", "git@github.com:ana/shop-site.git")


def test_no_repository_and_a_detached_head_give_nothing(tmp_path):
    """Outside a repository both facts are None; a detached HEAD has no branch."""
    assert client.git_info(str(tmp_path)) == (None, None)
    git = make_repo(tmp_path / "repo")
    (git / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert client.git_info(str(tmp_path / "repo"))[0] is None


# --- Codex rollouts ------------------------------------------------------------------------------

THREAD = "019e9625-802f-7e91-840a-cfe88d14117a"


def test_the_rollout_of_a_thread_is_found_in_the_dated_folders(tmp_path):
    """`sessions/YYYY/MM/DD/rollout-<ts>-<thread id>.jsonl` is found; other threads are not it."""
    sessions = tmp_path / "sessions"
    day = sessions / "2026" / "01" / "02"
    day.mkdir(parents=True)
    (day / "rollout-2026-01-02T09-00-00-11111111-2222-3333-4444-555555555555.jsonl").write_text("{}\n")
    wanted = day / f"rollout-2026-01-02T10-00-00-{THREAD}.jsonl"
    wanted.write_text("{}\n")
    (sessions / "2025" / "12" / "31").mkdir(parents=True)
    assert notify.find_rollout(THREAD, str(sessions)) == str(wanted)


def test_an_unknown_or_unsafe_thread_id_finds_nothing(tmp_path):
    """No such rollout, no sessions folder, or an id with path characters → None."""
    (tmp_path / "sessions" / "2026" / "01" / "02").mkdir(parents=True)
    assert notify.find_rollout(THREAD, str(tmp_path / "sessions")) is None
    assert notify.find_rollout(THREAD, str(tmp_path / "missing")) is None
    assert notify.find_rollout("../../x", str(tmp_path / "sessions")) is None


def test_codex_home_defaults_to_dot_codex(tmp_path):
    """$CODEX_HOME wins; otherwise ~/.codex."""
    assert notify.codex_home({"CODEX_HOME": "/opt/codex"}) == "/opt/codex"
    assert notify.codex_home({}) == str(tmp_path / "home" / ".codex")


def test_the_rollout_codex_names_wins_then_the_remembered_one_then_a_search(env, tmp_path):
    """A hook's transcript_path when it exists; else the path in the thread's state; else the dated folders."""
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    found = day / f"rollout-2026-01-02T10-00-00-{THREAD}.jsonl"
    found.write_text("{}\n")
    given = tmp_path / "given.jsonl"
    given.write_text("{}\n")
    env = {**env, "CODEX_HOME": str(codex_home)}
    assert notify.rollout_of(THREAD, env, known=str(given)) == str(given)
    assert notify.rollout_of(THREAD, env, known=None) == str(found)
    assert client.read_state(THREAD, env)["rollout_path"] == str(found)
    assert notify.rollout_of(THREAD, env, known=str(tmp_path / "gone.jsonl")) == str(found)
