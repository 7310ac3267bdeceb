"""SPEC §5 `extractive`: a deterministic record with no model, good enough to search until upgraded."""

from library.summarize import SummaryRequest, get_summarizer
from library.summarize.extractive import blocks_from_document

BLOCKS = (
    ("user", "## Fix the failing Stripe webhook test in payments/tests/test_webhook.py\n\n"
             "It started failing after yesterday's deploy."),
    ("assistant", "I'll run the test first to see the failure."),
    ("assistant", "Two checks failed in the last CI run, both in payments."),
    ("tool", "Bash: pytest payments/tests/test_webhook.py -x"),
    ("assistant", "The test failed with:\n"
                  "stripe.error.SignatureVerificationError: No signatures found matching the expected signature\n"
                  "The webhook secret in .env.test no longer matches the fixture."),
    ("user", "Here is what CI says:\nTraceback (most recent call last):\n  File \"payments/webhook.py\", line 41\n"
             "KeyError: 'STRIPE_WEBHOOK_SECRET'"),
    ("tool", "Edit: payments/tests/conftest.py"),
    ("tool", "Bash: pytest payments/tests/test_webhook.py -x"),
    ("tool", "Bash: git commit -am 'Read the webhook secret from the fixture'"),
    ("assistant", "Fixed: the fixture now sets STRIPE_WEBHOOK_SECRET and signs the payload with it. "
                  "All 14 webhook tests pass. I committed the change on the fix-webhook branch."),
)


def render(blocks):
    return "\n\n".join(f"{role}: {text}" for role, text in blocks)


def summarize(**request):
    return get_summarizer({"provider": "extractive"}, env={}).summarize(SummaryRequest(**request))


def test_a_realistic_segment_gets_a_record_from_its_own_words():
    summary = summarize(document=render(BLOCKS), blocks=BLOCKS)
    record = summary.record

    assert summary.summarizer == "extractive"
    assert (summary.input_tokens, summary.output_tokens, summary.attempts) == (0, 0, 1)
    assert record.title == "Fix the failing Stripe webhook test in payments/tests/test_webhook.py"
    assert record.summary.startswith(
        "The session started with this request: Fix the failing Stripe webhook test in payments/tests/test_webhook.py "
        "It started failing after yesterday's deploy.")
    assert "It ended with: Fixed: the fixture now sets STRIPE_WEBHOOK_SECRET" in record.summary
    assert record.questions == [
        "How was this handled: Fix the failing Stripe webhook test in payments/tests/test_webhook.py?",
        "What was the outcome of: Fix the failing Stripe webhook test in payments/tests/test_webhook.py?",
        "How was the error “stripe.error.SignatureVerificationError: No signatures found matching the expected "
        "signature” dealt with?",
    ]
    assert record.atoms == [
        {"kind": "error", "text": "Two checks failed in the last CI run, both in payments."},
        {"kind": "command", "text": "pytest payments/tests/test_webhook.py -x"},
        {"kind": "error", "text": "stripe.error.SignatureVerificationError: No signatures found matching the "
                                  "expected signature"},
        {"kind": "error", "text": "KeyError: 'STRIPE_WEBHOOK_SECRET'"},
        {"kind": "command", "text": "git commit -am 'Read the webhook secret from the fixture'"},
    ]
    assert record.project is None


def test_the_stored_original_alone_gives_the_same_record():
    """`jezero resummarize` has only the rendered text; it is split back into blocks."""
    assert blocks_from_document(render(BLOCKS)) == list(BLOCKS)
    assert summarize(document=render(BLOCKS)) == summarize(document=render(BLOCKS), blocks=BLOCKS)


def test_long_requests_make_short_titles():
    request = "please " + "refactor the importer so that it streams rows " * 10
    record = summarize(document=f"user: {request}", blocks=(("user", request),)).record
    assert len(record.title) <= 80 and record.title.endswith("…")
    assert record.summary.endswith("No answer from the agent was recorded.")


def test_a_question_asked_is_kept_as_the_first_question():
    blocks = (("user", "Why does uv lock fail on the CI runner?"), ("assistant", "Because of the proxy."))
    assert summarize(document=render(blocks), blocks=blocks).record.questions[0] == \
        "Why does uv lock fail on the CI runner?"


def test_odd_input_still_has_a_title_and_a_summary():
    for document, blocks, hint in [
        ("", (), None),
        ("", (), "Session 42 (part 2/2)"),
        ("tool: Bash: ls", (("tool", "Bash: ls"),), None),
        ("   \n\n  ", (("user", "  "),), None),
        ("just some text without roles", (), None),
    ]:
        record = summarize(document=document, blocks=blocks, title_hint=hint).record
        assert record.title and record.summary
    assert summarize(document="", title_hint="Session 42 (part 2/2)").record.title == "Session 42 (part 2/2)"
