"""The `extractive` summariser (docs/design.md "The extractive summariser"): with no model, a record a person accepts in the web
app and an agent can use, built from the session's own words — on the connectors' fixtures
and on the real and real-looking sessions in tests/fixtures/sessions (see SOURCES.md there)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import finish_blocks
from library.ingest.segments import SEPARATOR, render_block, segment
from library.ingest.summarize import SummaryRequest, get_summarizer
from library.ingest.summarize.prose import width
from library.ingest.summarize.schema import check_answer
from library.vocabulary import ATOM_KINDS

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
SESSIONS = FIXTURES / "sessions"
CONNECTOR_FOLDERS = [
    ("claude_code", "claude_code"), ("codex", "codex"), ("gemini_cli", "gemini_cli"), ("pi", "pi"),
    ("specstory", "specstory"), ("markdown", "markdown/board"),
]
SESSION_FILES = sorted(SESSIONS.glob("*.md"))


def summarize(**request):
    return get_summarizer({"provider": "extractive"}, env={}).summarize(SummaryRequest(**request))


def requests(ctype, path, *, limit=60_000, hints=True):
    """The requests the pipeline builds for every unit under `path` (blocks, text, hint)."""
    connector = registry.make(ctype, {"path": str(path)})
    out = []
    for unit in connector.discover():
        reading = connector.read(unit)
        blocks = finish_blocks(reading.entries)
        for seg in segment(unit.id, blocks, limit) if blocks else ():
            hint = seg.title_hint(reading.hints.get("title_hint") if hints else None)
            out.append(SummaryRequest(document=seg.text, title_hint=hint,
                                      blocks=tuple((b.role, b.text) for b in seg.blocks)))
    return out


def session(name, **options):
    """The record of the one segment of tests/fixtures/sessions/<name>."""
    (request,) = requests("specstory", SESSIONS / name, **options)
    return summarize(**vars(request)).record


def every_request(**options):
    for ctype, folder in CONNECTOR_FOLDERS:
        yield from requests(ctype, FIXTURES / folder, **options)
    for path in SESSION_FILES:
        yield from requests("specstory", path, **options)


def atom_texts(record, kind):
    return [atom["text"] for atom in record.atoms if atom["kind"] == kind]


# -- titles ------------------------------------------------------------------------------------

def test_the_sources_own_title_is_the_title():
    """A Claude Code summary line, a Codex thread name, a SpecStory heading, a pi session name,
    a Gemini summary, a note's first heading: the source named it, so that is the title."""
    checked = 0
    for request in every_request():
        if request.title_hint:
            assert summarize(**vars(request)).record.title == request.title_hint
            checked += 1
    assert checked >= 15


def test_the_parts_of_a_long_session_keep_distinct_titles():
    """Each segment's hint ends with " (part n/m)", and so does its title."""
    reqs = requests("specstory", SESSIONS / "321_test-failures-due-to-temporary-directory-issues.md", limit=8_000)
    titles = [summarize(**vars(request)).record.title for request in reqs]
    assert len(reqs) >= 2 and len(set(titles)) == len(titles)
    assert titles[0] == f"Test failures due to temporary directory issues (part 1/{len(reqs)})"
    assert all(title.endswith(f"(part {n}/{len(reqs)})") for n, title in enumerate(titles, start=1))


@pytest.mark.parametrize(("name", "title"), [
    ("shell-prompt-first.md", "The build worked yesterday, why can't vite find TideChart.vue now?"),
    ("banner-first.md", "Why is the Total column empty in the monthly report?"),
    ("paste-first.md", "Fix the CSRF origin error for the watering form behind the reverse proxy"),
    ("zh-photo-viewer.md", "图片查看器在 iPhone 上双指缩放时会闪烁"),
    ("ru-course.md", "Почему скрипт lmstudio_server.py зависает после запуска?"),
])
def test_without_a_title_the_first_real_request_is_the_title(name, title):
    """Past the shell prompt, the pasted build log, the banner, the bare path, the URL, the
    log line and the JSON the user pasted first: what they asked."""
    assert session(name).title == title


def test_pasted_output_never_becomes_the_title():
    """Without the sources' titles, no title is a shell prompt, a banner, a bare path, a URL,
    a pasted log line, stack frame or JSON fragment — and none is longer than 80 columns."""
    bad = re.compile(
        r"^(?:PS [A-Z]:\\|[\w.-]+@[\w.-]+:|[$❯>] |[│┃╭╰┌└├─═]|/|~/|[A-Za-z]:\\|https?://|\{|\[|\"\w+\":"
        r"|\d{4}-\d{2}-\d{2}|\d+:\d+|(?:INFO|WARN|ERROR|DEBUG)\b|at \S+\(|File \"|Traceback|vite v\d)")
    for request in every_request(hints=False):
        title = summarize(**vars(request)).record.title
        assert not bad.search(title), title
        assert width(title) <= 80, title


def test_a_title_hint_that_is_only_a_path_gives_way_to_the_request():
    (request,) = requests("specstory", SESSIONS / "paste-first.md")
    record = summarize(document=request.document, blocks=request.blocks,
                       title_hint="/tmp/holo/phase7_topview_zigzag_hybrid_path_w_root.mp4")
    assert record.record.title == "Fix the CSRF origin error for the watering form behind the reverse proxy"


def test_a_long_request_is_condensed_to_80_columns_at_a_word_or_clause():
    request = "please " + "refactor the importer so that it streams rows " * 10
    title = summarize(document=f"user: {request}", blocks=(("user", request),)).record.title
    assert width(title) <= 80 and title.endswith("…") and title.startswith("Refactor the importer")
    chinese = "这里需要根据实际要处理的图片再去开启集群例如不是强制模式下如果新增一张图片其实只有一个任务不需要开启这么多集群去做" * 2
    title = summarize(document=f"user: {chinese}", blocks=(("user", chinese),)).record.title
    assert width(title) <= 80 and title.endswith("…")       # CJK characters are two columns wide


# -- summary -----------------------------------------------------------------------------------

def test_the_summary_says_what_was_asked_what_was_done_and_how_it_ended():
    summary = session("shell-prompt-first.md").summary
    assert summary.startswith("The build worked yesterday, why can't vite find TideChart.vue now?")
    assert "I changed the import in `App.vue`" in summary
    assert "The session started" not in summary and "It ended with" not in summary
    summary = session("312_handling-concurrent-interactive-function-errors.md").summary
    assert summary.startswith("System.InvalidOperationException: Trying to run one or more interactive functions")
    assert "The solution is to restructure the code so that the Status operation completes" in summary
    assert summary.endswith("The build is now successful.")


def test_the_summary_is_two_to_five_of_the_documents_own_sentences():
    for request in every_request():
        record = summarize(**vars(request)).record
        count = len(re.findall(r"[.!?…。！？](?:\s|$)", record.summary))
        assert 1 <= count <= 5, record.summary
        if len(request.blocks) >= 4 and any(role == "assistant" for role, _ in request.blocks):
            assert count >= 2, record.summary


# -- questions ---------------------------------------------------------------------------------

def test_questions_are_the_users_requests_in_their_own_words():
    (cart,) = [r for r in requests("claude_code", FIXTURES / "claude_code") if r.title_hint == "Cart discount"]
    assert summarize(**vars(cart)).record.questions[:2] == [
        "How to add a discount field to the cart total?", "How to apply it once?"]
    assert session("shell-prompt-first.md").questions[:2] == [
        "The build worked yesterday, why can't vite find TideChart.vue now?",
        "How to add a check so a wrong import case fails in CI on Linux too?",
    ]
    (tasks,) = [r for r in requests("specstory", FIXTURES / "specstory") if r.title_hint == "List the open tasks"]
    assert summarize(**vars(tasks)).record.questions[0] == "What tasks are open?"


def test_a_question_about_this_names_the_error_the_user_pasted():
    assert session("309_fixing-unnecessary-fmt-sprintf-usage.md").questions == [
        "How can I resolve “unnecessary use of fmt.Sprintf (S1039)”?",
        "How can I resolve “address format \"%s:%d\" does not work with IPv6 (passed to net.Dial at L55)”?",
        "How can I resolve “declared and not used: r”?",
    ]


def test_questions_are_never_templates_around_the_title():
    for request in every_request():
        record = summarize(**vars(request)).record
        assert 3 <= len(record.questions) <= 6 or len(request.document) < 2_000, record.questions
        for question in record.questions:
            assert not re.match(rf".+: {re.escape(record.title)}\??$", question), question
            assert not re.search(r"How was this handled|What was the outcome of|What was decided about", question)


def test_non_english_questions_stay_in_the_users_language():
    zh = session("zh-photo-viewer.md")
    assert "为什么切换图片以后缩放比例没有重置？" in zh.questions
    assert "能不能改成用 CSS transform 实现缩放？" in zh.questions
    assert "我已经把缩放改成了 CSS transform，并在切换图片时重置缩放比例。" in zh.summary
    ru = session("ru-course.md")
    assert ru.questions[:2] == ["Почему скрипт lmstudio_server.py зависает после запуска?",
                                "Добавь в скрипт сообщение о том, на каком порту запущен сервер"]
    assert len(ru.questions) == 3  # filled from what the session holds: the file it changed
    assert "lmstudio_server.py" in ru.questions[2]


# -- atoms -------------------------------------------------------------------------------------

def test_an_error_comes_with_the_change_that_fixed_it():
    atoms = session("312_handling-concurrent-interactive-function-errors.md").atoms
    assert atoms[0]["kind"] == "error"
    assert atoms[0]["text"].startswith("System.InvalidOperationException\nMessage=Trying to run one or more")
    assert atoms[1] == {"kind": "fix", "text": "The solution is to restructure the code so that the Status "
                                                "operation completes before any interactive prompts are shown."}
    atoms = session("shell-prompt-first.md").atoms
    assert atoms[0]["text"].startswith("Error: [vite:load-fallback] Could not load C:\\Users\\marta\\src")
    assert atoms[1] == {"kind": "fix", "text": "I changed the import in `App.vue` to `./Charts/TideChart.vue` "
                                                "so it matches the renamed folder."}


def test_each_pasted_error_is_paired_with_its_own_fix():
    record = session("309_fixing-unnecessary-fmt-sprintf-usage.md")
    kinds = [atom["kind"] for atom in record.atoms]
    assert kinds[:6] == ["error", "fix"] * 3
    assert atom_texts(record, "error") == [
        "unnecessary use of fmt.Sprintf (S1039)",
        'address format "%s:%d" does not work with IPv6 (passed to net.Dial at L55)',
        "declared and not used: r",
    ]
    assert record.atoms[3]["text"].startswith("The fix addresses the IPv6 compatibility issue")


def test_only_error_messages_are_error_atoms():
    """A sentence about a failure, code that raises or logs an error, and the line that
    announces an error are not errors; the messages themselves are."""
    blocks = (
        ("user", "Fix the failing Stripe webhook test.\n\nIt started failing after yesterday's deploy."),
        ("assistant", "Two checks failed in the last CI run, both in payments. The error occurs because the "
                      "secret changed."),
        ("assistant", "The handler does this:\n```python\nif not sig:\n    raise ValueError('missing signature')\n"
                      "logger.error('verification failed: %s', exc)\n```"),
        ("tool", "Bash: pytest payments/tests/test_webhook.py -x"),
        ("assistant", "The test failed with:\n"
                      "stripe.error.SignatureVerificationError: No signatures found matching the expected signature"),
        ("assistant", "Fixed it by reading STRIPE_WEBHOOK_SECRET from the fixture; all 14 webhook tests pass."),
    )
    record = summarize(document=SEPARATOR.join(f"{r}: {t}" for r, t in blocks), blocks=blocks).record
    assert atom_texts(record, "error") == [
        "stripe.error.SignatureVerificationError: No signatures found matching the expected signature"]
    assert atom_texts(record, "fix") == [
        "Fixed it by reading STRIPE_WEBHOOK_SECRET from the fixture; all 14 webhook tests pass."]


def test_commands_that_did_something_are_kept_and_looking_around_is_not():
    (codex,) = [r for r in requests("codex", FIXTURES / "codex") if "Bash: git status" in r.document]
    assert atom_texts(summarize(**vars(codex)).record, "command") == ["pytest -q tests/test_cart.py", "ruff check ."]
    # `dotnet build` ran three times (once behind a `cd`): the one that worked is kept, once.
    assert atom_texts(session("312_handling-concurrent-interactive-function-errors.md"), "command") == [
        "dotnet build", "dotnet run --project DiffMore.ConsoleApp"]


def test_decisions_are_the_users_own_words():
    assert atom_texts(session("314_change-existing-publish-functionality.md"), "decision") == [
        "instead of the new New-WingetPackages function, I would rather change the existing publish "
        "functionality to do what we need"]
    assert atom_texts(session("banner-first.md"), "decision") == [
        "keep the balance column right-aligned, and don't change the CSV export"]


def test_the_files_changed_and_sentences_about_distinctive_names_are_facts():
    (cart,) = [r for r in requests("claude_code", FIXTURES / "claude_code") if r.title_hint == "Cart discount"]
    assert "Files changed: cart.py, totals.py, tests/test_cart.py" in atom_texts(summarize(**vars(cart)).record, "fact")
    (sub,) = [r for r in requests("claude_code", FIXTURES / "claude_code") if r.title_hint == "Find discount code"]
    assert atom_texts(summarize(**vars(sub)).record, "fact") == ["Discounts are computed in cart.py, apply_discount()."]
    facts = atom_texts(session("banner-first.md"), "fact")
    assert any("`render_rows()`" in fact and "accumulator" in fact for fact in facts)


def test_atoms_are_few_short_verbatim_and_of_known_kinds():
    for request in every_request():
        record = summarize(**vars(request)).record
        assert len(record.atoms) <= 12
        for atom in record.atoms:
            assert atom["kind"] in ATOM_KINDS
            assert len(atom["text"]) <= 220
            if atom["kind"] in ("error", "command", "decision"):
                # Copied, not written: every line of it is in the document.
                for line in atom["text"].rstrip("…").splitlines():
                    assert line.strip() in request.document, atom


# -- the contract --------------------------------------------------------------------------------

def test_every_record_passes_check_answer_unchanged():
    for request in every_request():
        summary = summarize(**vars(request))
        record = summary.record
        assert summary.summarizer == "extractive" and (summary.input_tokens, summary.output_tokens) == (0, 0)
        assert check_answer({"title": record.title, "summary": record.summary, "questions": record.questions,
                             "atoms": record.atoms, "project": record.project}) == record
        assert record.project is None


def test_the_stored_original_alone_gives_the_same_record():
    """`jezero resummarize` has only the rendered text; it is parsed back into the blocks."""
    for request in every_request():
        assert summarize(document=request.document, title_hint=request.title_hint) == summarize(**vars(request))


def test_the_same_document_gives_the_same_record_in_another_process():
    """No library-wide statistics, no set order: a fresh interpreter with another hash seed
    writes the same records."""
    script = (
        "import json, django; django.setup()\n"
        "from tests.unit.test_summarize_extractive import every_request, summarize\n"
        "print(json.dumps([vars(summarize(**vars(r)).record) for r in every_request()], ensure_ascii=False))\n"
    )
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "DJANGO_SETTINGS_MODULE": "jezero_site.settings"}
        done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120, check=True)
        outputs.append(json.loads(done.stdout))
    here = [vars(summarize(**vars(r)).record) for r in every_request()]
    assert outputs[0] == outputs[1] == json.loads(json.dumps(here, ensure_ascii=False))


def test_odd_input_still_has_a_title_and_a_summary():
    for document, blocks, hint in [
        ("", (), None),
        ("", (), "Session 42 (part 2/2)"),
        ("tool: Bash: ls", (("tool", "Bash: ls"),), None),
        ("   \n\n  ", (("user", "  "),), None),
        ("just some text without roles", (), None),
        ("assistant: I'm ready to search the codebase.", (("assistant", "I'm ready to search the codebase."),), None),
        ("tool: :\n\nuser: ...", (("tool", ":"), ("user", "...")), None),
        ("user: ╭──╮\n│ │", (("user", "╭──╮\n│ │"),), "/tmp/a.py"),
    ]:
        record = summarize(document=document, blocks=blocks, title_hint=hint).record
        assert record.title and record.summary
    assert summarize(document="", title_hint="Session 42 (part 2/2)").record.title == "Session 42 (part 2/2)"
    assert summarize(document="some notes without roles").record.title == "Some notes without roles"


def test_rendering_and_parsing_agree_for_the_summariser():
    """The blocks the summariser reads from a stored original are the ones that were rendered."""
    from connectors.base import Block

    blocks = [Block(0, "user", "CI says:\n\nTest summary: total: 213, failed: 32", None),
              Block(1, "assistant", "First: the temp folder is full.", None)]
    document = SEPARATOR.join(render_block(b) for b in blocks)
    assert summarize(document=document) == summarize(document=document, blocks=tuple((b.role, b.text) for b in blocks))
