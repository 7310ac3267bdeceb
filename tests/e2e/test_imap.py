"""The imap connector against a real IMAP server (Debian's Dovecot on 127.0.0.1 over TLS, see
tests/fakes/dovecot.py), end to end through `library.ingest.pipeline.run` with the real extractive
summariser: threads, HTML mail, quotes, a new message between runs, a UIDVALIDITY change,
thread keys (docs/design.md "Items", and the `#0` keys of older libraries) and a refused login."""

from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import pytest

from connectors import registry
from connectors.base import UnitError
from connectors.imap import ImapConnector
from jezero_site.config import validate
from library.ingest import pipeline
from library.models import Item, RunReport, UnitCursor
from tests.conftest import Counting
from tests.fakes.dovecot import PASSWORD, Dovecot, dovecot_missing

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(dovecot_missing() is not None, reason=str(dovecot_missing()))]

PASSWORD_ENV = "JEZERO_TEST_IMAP_PASSWORD"
T0 = datetime(2025, 3, 3, 9, 15, tzinfo=UTC)
BOB = "Bob Builder <bob@example.org>"
ALICE = "Alice Example <alice@example.org>"


def mail(message_id, subject, body, *, sender=BOB, to=ALICE, minutes=0, replying_to=(), html=None):
    """An RFC 5322 message; `replying_to` lists the thread's earlier ids, oldest first."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg["Date"] = (T0 + timedelta(minutes=minutes)).strftime("%a, %d %b %Y %H:%M:%S +0000")
    msg["Message-ID"] = message_id
    if replying_to:
        msg["In-Reply-To"] = replying_to[-1]
        msg["References"] = " ".join(replying_to)
    if html is None:
        msg.set_content(body)
    else:
        msg.set_content(html, subtype="html")
    return msg


def at(minutes):
    return T0 + timedelta(minutes=minutes)


ORIGINAL = mail("<q2-1@example.org>", "Q2 offsite budget",
                "The budget for the Q2 offsite is 40k, venue included.\nThoughts?\n\n-- \nBob Builder\nHead of Events\n")
ANSWER = mail("<q2-2@example.org>", "Re: Q2 offsite budget",
              "Fine by me if catering fits in the 40k.\n\n"
              "On Mon, 3 Mar 2025 at 09:15, Bob Builder <bob@example.org> wrote:\n"
              "> The budget for the Q2 offsite is 40k, venue included.\n> Thoughts?\n\n"
              "-- \nAlice Example\nHead of Finance\n",
              sender=ALICE, to=BOB, minutes=60, replying_to=["<q2-1@example.org>"])
CONFIRMATION = mail("<q2-3@example.org>", "Re: Q2 offsite budget",
                    "Catering is 6k, so we stay under budget. Booking the venue now.\n\n"
                    "On Mon, 3 Mar 2025 at 10:15, Alice Example <alice@example.org> wrote:\n"
                    "> Fine by me if catering fits in the 40k.\n"
                    "> On Mon, 3 Mar 2025 at 09:15, Bob Builder <bob@example.org> wrote:\n"
                    ">> The budget for the Q2 offsite is 40k, venue included.\n",
                    minutes=120, replying_to=["<q2-1@example.org>", "<q2-2@example.org>"])
NEWSLETTER = mail("<news-7@lists.example.org>", "Venue news",
                  None, sender="Venue Team <news@venue.example.org>", minutes=30,
                  html=("<html><head><style>.x{color:red}</style></head><body>"
                        "<h1>Spring opening</h1><p>The <b>lake terrace</b> opens on <i>April 1</i>.<br>"
                        "Book early: <a href='https://t.example.org/c?u=1'>reserve a table</a>.</p>"
                        "<script>track()</script></body></html>"))


@pytest.fixture(scope="module")
def server():
    dovecot = Dovecot().start()
    yield dovecot
    dovecot.stop()


@pytest.fixture
def box(server):
    """A fresh, empty account on the shared server."""
    return server.mailbox()


@pytest.fixture
def configure(settings, server, box, monkeypatch):
    """`configure(**options)`: the `mail-home` connector reading `box` (type imap, TLS with the
    server's certificate as ca_file); the password is in the environment."""
    monkeypatch.setitem(registry.CONNECTOR_TYPES, "imap", ImapConnector)
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)

    def configure(**options):
        options = {"name": "mail-home", "type": "imap", "host": "127.0.0.1", "port": server.port, "user": box.user,
                   "password_env": PASSWORD_ENV, "ca_file": server.ca_file, **options}
        settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [options]})["connectors"]}

    configure()
    return configure


def thread_item(message_id):
    return Item.objects.get(source="mail-home", original_ref=message_id)


def test_a_reply_chain_is_one_external_item_without_quotes_or_signatures(box, configure):
    """Three messages in two folders (the answer was sent, so it is in Sent, a copy in INBOX too)
    become one item: each message's own words once, no quoted text, no signatures; nothing
    on the server is marked as read."""
    configure(folders=["INBOX", "Sent"])
    box.append(ORIGINAL, when=at(0))
    box.append(ANSWER, when=at(60), folder="Sent")
    box.append(ANSWER, when=at(61))
    box.append(CONFIRMATION, when=at(120))
    model = Counting()

    report = pipeline.run("mail-home", summarizer=model)

    assert (report.units_seen, report.units_stored, report.units_failed, report.errors) == (1, 1, 0, [])
    item = thread_item("<q2-1@example.org>")
    assert item.trust == "external" and item.source == "mail-home"
    original = item.original
    assert original.count("The budget for the Q2 offsite is 40k") == 1
    assert original.count("Fine by me if catering fits in the 40k.") == 1
    assert "Catering is 6k, so we stay under budget." in original
    assert "wrote:" not in original and "\n>" not in original
    assert "Head of Events" not in original and "Head of Finance" not in original
    assert original.count("user: From: ") == 3
    assert original.index("Bob Builder <bob@example.org> | Date: 2025-03-03 09:15 UTC | Subject: Q2 offsite budget") \
        < original.index("Alice Example <alice@example.org> | Date: 2025-03-03 10:15 UTC") \
        < original.index("Catering is 6k")
    assert item.hints["title_hint"] == "Q2 offsite budget"
    assert item.hints["participants"] == ["bob@example.org", "alice@example.org"]
    assert item.hints["folders"] == ["INBOX", "Sent"]
    assert item.hints["message_ids"] == ["<q2-1@example.org>", "<q2-2@example.org>", "<q2-3@example.org>"]
    assert item.occurred_at == at(120)
    flags = box.flags() + box.flags("Sent")
    assert len(flags) == 4 and not any("\\Seen" in flag for flag in flags)


def test_html_only_mail_is_summarised_as_text(box, configure):
    box.append(NEWSLETTER, when=at(30))
    pipeline.run("mail-home", summarizer=Counting())
    original = thread_item("<news-7@lists.example.org>").original
    assert original.endswith("Spring opening\n\nThe lake terrace opens on April 1.\nBook early: reserve a table.")
    assert "<" not in original.split("\n", 1)[1] and "track()" not in original and "color" not in original


def test_a_huge_message_is_read_in_part_and_its_attachment_only_named(box, configure):
    """A 3 MB attachment: the message is fetched up to 2 MiB, its text still reaches the item."""
    huge = mail("<scan@example.org>", "Signed contract", "The signed contract is attached.")
    huge.add_attachment(bytes(range(256)) * 12_000, maintype="application", subtype="pdf", filename="contract.pdf")
    box.append(huge, when=at(5))
    report = pipeline.run("mail-home", summarizer=Counting())
    assert report.warnings == {"message_truncated": 1}
    assert thread_item("<scan@example.org>").original.endswith(
        "The signed contract is attached.\n\n[attachment: contract.pdf]")


def test_a_new_message_between_runs_re_summarises_only_its_thread(box, configure):
    box.append(ORIGINAL, when=at(0))
    box.append(ANSWER, when=at(60))
    box.append(NEWSLETTER, when=at(30))
    model = Counting()
    first = pipeline.run("mail-home", summarizer=model)
    assert (first.units_stored, first.model_calls) == (2, 2)
    before = {item.key: item.pk for item in Item.objects.all()}

    assert pipeline.run("mail-home", summarizer=model).units_changed == 0     # nothing new: nothing read
    box.append(CONFIRMATION, when=at(120))
    second = pipeline.run("mail-home", summarizer=model)

    assert (second.units_seen, second.units_changed, second.model_calls) == (2, 1, 1)
    assert "Catering is 6k" in model.requests[-1].document
    assert {item.key: item.pk for item in Item.objects.all()} == before       # updated in place
    assert "Catering is 6k" in thread_item("<q2-1@example.org>").original


def test_a_changed_uidvalidity_re_reads_the_folder_without_duplicating_items(box, configure):
    configure(folders=["Projects"])
    messages = [(ORIGINAL, 0), (ANSWER, 60), (NEWSLETTER, 30)]
    for message, minutes in messages:
        box.append(message, when=at(minutes), folder="Projects")
    model = Counting()
    pipeline.run("mail-home", summarizer=model)
    items = {item.key: (item.pk, item.text_hash) for item in Item.objects.all()}
    cursors = dict(UnitCursor.objects.values_list("unit_id", "fingerprint"))
    old_uidvalidity = box.uidvalidity("Projects")

    box.recreate("Projects")                       # the server forgets every UID of the folder
    for message, minutes in messages:
        box.append(message, when=at(minutes), folder="Projects")
    assert box.uidvalidity("Projects") != old_uidvalidity
    report = pipeline.run("mail-home", summarizer=model)

    assert (report.units_seen, report.units_changed, report.units_stored) == (2, 2, 2)
    assert report.model_calls == 0 and report.segments_unchanged == 2          # same text: no model call
    assert {item.key: (item.pk, item.text_hash) for item in Item.objects.all()} == items
    new_cursors = dict(UnitCursor.objects.values_list("unit_id", "fingerprint"))
    assert new_cursors.keys() == cursors.keys()
    assert all(new_cursors[unit] != cursors[unit] for unit in cursors)
    assert pipeline.run("mail-home", summarizer=model).units_changed == 0


def thread_keys():
    """`<source>:<thread id>` of every thread the connector has stored (its cursors' unit ids)."""
    return {f"mail-home:{unit}" for unit in UnitCursor.objects.filter(connector="mail-home").values_list("unit_id",
                                                                                                          flat=True)}


def test_a_thread_is_one_document_keyed_by_its_source_and_thread(box, configure):
    """docs/design.md "Items": a thread's key is `<source>:<thread id>`, without the `#<first block>` that
    the segments of an agent session carry."""
    box.append(ORIGINAL, when=at(0))
    box.append(ANSWER, when=at(60))
    box.append(NEWSLETTER, when=at(30))
    pipeline.run("mail-home", summarizer=Counting())
    keys = set(Item.objects.values_list("key", flat=True))
    assert len(keys) == 2 and keys == thread_keys()
    assert not any("#" in key for key in keys)


def test_an_item_stored_under_an_old_hash_zero_key_is_renamed_not_duplicated(box, configure):
    """A library written before keys took their present form (docs/design.md "Items") holds `<source>:<thread>#0`. Re-read with
    no change (after `connector reset`), the item takes its new key at no model call; a new
    message updates the same item. Its id never changes and no second item appears."""
    box.append(ORIGINAL, when=at(0))
    box.append(NEWSLETTER, when=at(30))
    model = Counting()
    pipeline.run("mail-home", summarizer=model)
    thread = thread_item("<q2-1@example.org>")
    newsletter = thread_item("<news-7@lists.example.org>")
    for item in (thread, newsletter):
        Item.objects.filter(pk=item.pk).update(key=f"{item.key}#0")       # as an older version stored them

    UnitCursor.objects.filter(connector="mail-home").delete()               # `jezero connector reset mail-home`
    report = pipeline.run("mail-home", summarizer=model)
    assert (report.units_stored, report.model_calls, report.segments_unchanged) == (2, 0, 2)
    assert dict(Item.objects.values_list("key", "pk")) == {thread.key: thread.pk, newsletter.key: newsletter.pk}

    Item.objects.filter(pk=thread.pk).update(key=f"{thread.key}#0")
    box.append(ANSWER, when=at(60))
    report = pipeline.run("mail-home", summarizer=model)
    assert (report.units_changed, report.model_calls) == (1, 1)
    assert dict(Item.objects.values_list("key", "pk")) == {thread.key: thread.pk, newsletter.key: newsletter.pk}
    assert "Fine by me if catering fits in the 40k." in Item.objects.get(pk=thread.pk).original


def test_since_leaves_older_mail_out(box, configure):
    configure(since="2025-03-04")
    box.append(ORIGINAL, when=at(0))
    box.append(mail("<late@example.org>", "Later", "Arrived on the fourth."), when=at(24 * 60))
    pipeline.run("mail-home", summarizer=Counting())
    assert [item.original_ref for item in Item.objects.all()] == ["<late@example.org>"]


def test_connection_problems_name_the_server_and_the_cause(server, box, monkeypatch):
    def connector(**options):
        return ImapConnector(**{"host": "127.0.0.1", "port": server.port, "user": box.user,
                                "password_env": PASSWORD_ENV, "ca_file": server.ca_file, **options})


    where = f"127.0.0.1:{server.port}"
    with pytest.raises(UnitError, match=f"^{where}: the environment variable {PASSWORD_ENV} is not set"):
        list(connector().discover())
    monkeypatch.setenv(PASSWORD_ENV, "not the password")
    with pytest.raises(UnitError, match=rf"^{where}: login failed \(AUTHENTICATIONFAILED\)$"):
        list(connector().discover())
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    with pytest.raises(UnitError, match=f"^{where}: certificate not trusted .*set ca_file"):
        list(connector(ca_file=None).discover())
    with pytest.raises(UnitError, match=r"^127\.0\.0\.1:1: cannot connect \(Connection refused\)"):
        list(connector(port=1).discover())
    with pytest.raises(UnitError, match=f"^{where}: cannot open folder 'Archive' "):
        list(connector(folders=["INBOX", "Archive"]).discover())


def test_a_wrong_password_is_a_clear_error_and_changes_nothing(server, box, configure, monkeypatch):
    box.append(ORIGINAL, when=at(0))
    pipeline.run("mail-home", summarizer=Counting())
    items = list(Item.objects.values_list("key", "text_hash", "updated_at"))
    cursors = list(UnitCursor.objects.values_list("unit_id", "fingerprint", "updated_at"))
    box.append(ANSWER, when=at(60))
    monkeypatch.setenv(PASSWORD_ENV, "not the password")

    report = pipeline.run("mail-home", summarizer=Counting())

    message = f"127.0.0.1:{server.port}: login failed (AUTHENTICATIONFAILED)"
    assert [error["error"] for error in report.errors] == [message]
    assert report.source_failed and report.units_stored == 0
    row = RunReport.objects.order_by("-pk").first()
    assert (row.outcome, row.errors) == ("failed", report.errors)
    assert list(Item.objects.values_list("key", "text_hash", "updated_at")) == items
    assert list(UnitCursor.objects.values_list("unit_id", "fingerprint", "updated_at")) == cursors


def test_markers_in_mail_hide_a_span_and_keep_a_thread_out(box, configure):
    """A mail thread honours the author's markers like a session: a `<private>` span (in the
    body and the subject) is hidden before anything is stored; a message with the line
    `jezero: skip` keeps its whole thread out."""
    hidden = mail("<m-1@example.org>", "Lab results <private>for Dr. Quokkavelt</private>",
                  "The results are in.\n<private>Quokkavelt diagnosis:\nmild</private>\nCall me tomorrow.\n")
    skipped = mail("<m-2@example.org>", "Contract draft", "Quokkavelt contract terms attached.\n\nJezero: Skip\n",
                   minutes=10)
    box.append(hidden, when=at(0))
    box.append(skipped, when=at(10))
    model = Counting()

    report = pipeline.run("mail-home", summarizer=model)

    assert (report.units_seen, report.units_stored, report.units_kept_out) == (2, 1, 1)
    item = thread_item("<m-1@example.org>")
    assert "The results are in." in item.original and "[private]" in item.original
    assert item.hints["title_hint"] == "Lab results [private]"
    assert not Item.objects.filter(original_ref="<m-2@example.org>").exists()
    stored = " ".join(str(value) for value in Item.objects.values_list("original", "hints", "title", "summary"))
    assert "Quokkavelt" not in stored and "Quokkavelt" not in repr(model.requests)
