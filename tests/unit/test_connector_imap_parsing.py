"""The imap connector without a server (docs/design.md "Connectors"): threading, what one message contributes to
the summariser (quotes, signatures, HTML, attachments), and the small protocol parsers.
tests/e2e/test_imap.py runs the connector against a real Dovecot."""

import imaplib
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from connectors import imap, mail

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def head(message_id, *, refs=(), reply_to=None, minutes=0, gm=None, folder="INBOX", uid=1, uidvalidity=7):
    return mail.Head(message_id=message_id, references=tuple(refs), in_reply_to=reply_to,
                     time=T0 + timedelta(minutes=minutes), gm_thread=gm,
                     locations=[mail.Location(folder, uidvalidity, uid)])


def by_root(heads):
    return {thread.root: [h.message_id for h in thread.heads] for thread in mail.threads(heads)}


def message(body="Hello.", *, subject="Budget", sender="Bob Builder <bob@example.org>", html=None, **headers):
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, "alice@example.org", subject
    msg["Message-ID"] = "<m1@example.org>"
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    if html is None:
        msg.set_content(body)
    elif body:
        msg.set_content(body)
        msg.add_alternative(html, subtype="html")
    else:
        msg.set_content(html, subtype="html")
    return msg


def read(msg, **options):
    warnings = Counter()
    raw = msg if isinstance(msg, bytes) else msg.as_bytes()
    return mail.read_message(raw, T0, warnings, **options), warnings


def body_of(msg, **options):
    result, _ = read(msg, **options)
    return result.entry.text.split("\n\n", 1)[1] if "\n\n" in result.entry.text else ""


# -- threading

def test_a_reply_chain_is_one_thread_rooted_at_the_first_message():
    heads = [head("<a@x>"), head("<b@x>", refs=["<a@x>"], reply_to="<a@x>", minutes=5, uid=2),
             head("<c@x>", refs=["<a@x>", "<b@x>"], reply_to="<b@x>", minutes=9, uid=3),
             head("<other@x>", minutes=1, uid=4)]
    assert by_root(heads) == {"<a@x>": ["<a@x>", "<b@x>", "<c@x>"], "<other@x>": ["<other@x>"]}


def test_the_thread_id_survives_a_new_reply_and_the_original_arriving_late():
    """Replies first (the original was not in the folder), then the original: same root, same id."""
    replies = [head("<b@x>", refs=["<a@x>"], minutes=5, uid=2), head("<c@x>", refs=["<a@x>", "<b@x>"], minutes=9, uid=3)]
    (before,) = mail.threads(replies)
    (after,) = mail.threads([*replies, head("<a@x>", uid=9), head("<d@x>", refs=["<a@x>", "<c@x>"], minutes=20, uid=10)])
    assert before.root == after.root == "<a@x>"
    assert before.id == after.id and len(before.id) == 16
    assert before.fingerprint != after.fingerprint


def test_in_reply_to_alone_links_a_chain_and_cycles_do_not_hang():
    heads = [head("<a@x>"), head("<b@x>", reply_to="<a@x>", minutes=1), head("<c@x>", reply_to="<b@x>", minutes=2)]
    assert by_root(heads) == {"<a@x>": ["<a@x>", "<b@x>", "<c@x>"]}
    loop = [head("<p@x>", reply_to="<q@x>"), head("<q@x>", reply_to="<p@x>", minutes=1)]
    assert len(mail.threads(loop)) == 1


def test_a_new_message_changes_only_its_own_threads_fingerprint():
    first = [head("<a@x>", uid=1), head("<z@x>", uid=2, minutes=1)]
    second = [*first, head("<b@x>", refs=["<a@x>"], uid=3, minutes=2)]
    before = {t.id: t.fingerprint for t in mail.threads(first)}
    after = {t.id: t.fingerprint for t in mail.threads(second)}
    assert before.keys() == after.keys()
    changed = [tid for tid in before if before[tid] != after[tid]]
    assert changed == [mail.threads(first)[0].id]      # the <a@x> thread, sorted first


def test_a_new_uidvalidity_changes_fingerprints_but_not_ids():
    old = mail.threads([head("<a@x>", uidvalidity=7, uid=1), head("<b@x>", refs=["<a@x>"], uidvalidity=7, uid=2)])
    new = mail.threads([head("<a@x>", uidvalidity=8, uid=1), head("<b@x>", refs=["<a@x>"], uidvalidity=8, uid=2)])
    assert [t.id for t in old] == [t.id for t in new]
    assert [t.fingerprint for t in old] != [t.fingerprint for t in new]


def test_gmail_threads_group_by_x_gm_thrid():
    heads = [head("<a@x>", gm="1789"), head("<b@x>", gm="1789", minutes=3),      # no References: Gmail knows
             head("<c@x>", refs=["<a@x>"], gm="2000", minutes=4)]               # Gmail split it off
    threads = mail.threads(heads)
    assert [[h.message_id for h in t.heads] for t in threads] == [["<a@x>", "<b@x>"], ["<c@x>"]]
    assert threads[0].root == "<a@x>" and threads[1].root == "<a@x>"
    assert threads[0].id != threads[1].id


def test_headers_parse_into_a_head_and_a_missing_message_id_gets_a_stable_one():
    raw = (b"Message-ID: <b@x>\r\nIn-Reply-To: <a@x>\r\nReferences: <root@x>\r\n <a@x>\r\n"
           b"Date: Mon, 03 Mar 2025 10:00:00 +0100\r\nSubject: =?utf-8?q?Re=3A_K=C3=BCche?=\r\n\r\n")
    parsed = mail.parse_head(raw, datetime(2025, 3, 3, 9, 30, tzinfo=UTC), size=120)
    assert (parsed.message_id, parsed.references, parsed.in_reply_to) == ("<b@x>", ("<root@x>", "<a@x>"), "<a@x>")
    assert parsed.time == datetime(2025, 3, 3, 9, 0, tzinfo=UTC)        # the Date, earlier than INTERNALDATE
    assert parsed.subject == "Re: Küche" and parsed.size == 120
    future = mail.parse_head(b"Date: Mon, 03 Mar 2031 10:00:00 +0000\r\n\r\n", T0)
    assert future.time == T0                                             # a forged future Date does not win
    anonymous = b"Date: Mon, 03 Mar 2025 10:00:00 +0000\r\nFrom: x@y\r\nSubject: hi\r\n\r\n"
    assert mail.parse_head(anonymous, T0).message_id == mail.parse_head(anonymous, T0).message_id
    assert mail.parse_head(anonymous, T0).message_id.endswith("@message-id.invalid>")


# -- one message

def test_a_message_is_a_header_line_and_its_body():
    result, warnings = read(message("The offsite budget is 40k."))
    assert result.entry.role == "user" and result.entry.time == T0
    assert result.entry.text == ("From: Bob Builder <bob@example.org> | Date: 2025-03-03 09:00 UTC | Subject: Budget"
                                 "\n\nThe offsite budget is 40k.")
    assert result.participants == ["bob@example.org", "alice@example.org"]
    assert not warnings


def test_the_subject_is_repeated_only_when_it_changes():
    same, _ = read(message(subject="Re: Budget"), previous_subject="Budget")
    changed, _ = read(message(subject="Re: Budget (revised)"), previous_subject="Budget")
    assert "Subject:" not in same.entry.text.split("\n")[0]
    assert "Subject: Re: Budget (revised)" in changed.entry.text


def test_quoted_replies_and_their_attribution_are_removed():
    body = ("Fine by me, book it.\n\n"
            "On Mon, 3 Mar 2025 at 09:15, Bob Builder <\nbob@example.org> wrote:\n"
            "> The offsite budget is 40k.\n>\n> Thoughts?\n")
    assert body_of(message(body)) == "Fine by me, book it."


def test_inline_answers_keep_the_answers():
    body = "> Can we do Friday?\nYes, Friday works.\n> And the room?\nRoom 4 is booked.\n"
    assert body_of(message(body)) == "Yes, Friday works.\nRoom 4 is booked."


def test_signatures_and_mobile_footers_are_removed():
    assert body_of(message("Booked.\n\n-- \nAlice Example\nHead of Finance\n+1 555 0100\n")) == "Booked."
    assert body_of(message("Booked.\n\nSent from my iPhone\n")) == "Booked."


def test_outlook_quoted_originals_are_removed():
    body = "Approved.\n\n-----Original Message-----\nFrom: Bob\nSent: Monday\n\nThe budget is 40k.\n"
    assert body_of(message(body)) == "Approved."
    body = "Approved.\n\n________________________________\nFrom: Bob Builder\nSent: Monday\nThe budget is 40k.\n"
    assert body_of(message(body)) == "Approved."


def test_html_only_mail_becomes_text():
    html = ("<html><head><style>p { color: red }</style><title>Newsletter</title></head><body>"
            "<p>Hello <b>Alice</b>,<br>the venue is <a href='https://t.example/x?id=1'>confirmed</a>.</p>"
            "<ul><li>Lunch at 12</li><li>Talks at 14</li></ul><script>track()</script>"
            "<div class='gmail_quote'><div class='gmail_attr'>On Mon, Bob wrote:</div>"
            "<blockquote>Is the venue confirmed?</blockquote></div></body></html>")
    assert body_of(message("", html=html)) == ("Hello Alice,\nthe venue is confirmed.\n\n"
                                               "- Lunch at 12\n- Talks at 14")


def test_the_plain_part_wins_over_html_and_outlook_replies_are_cut_from_html():
    assert body_of(message("Plain words.", html="<p>HTML words.</p>")) == "Plain words."
    html = ("<div>Approved.</div><div id='appendonsend'></div><hr>"
            "<div id='divRplyFwdMsg'><b>From:</b> Bob</div><div>The budget is 40k.</div>")
    assert body_of(message("", html=html)) == "Approved."


def test_attachments_are_named_not_read():
    msg = message("See attached.")
    msg.add_attachment(b"%PDF-1.7 secret numbers", maintype="application", subtype="pdf", filename="invoice.pdf")
    forwarded = message("Inner text", subject="Old thread")
    msg.add_attachment(forwarded)
    text = read(msg)[0].entry.text
    assert text.endswith("See attached.\n\n[attachment: invoice.pdf]\n[attachment: message Old thread]")
    assert "secret numbers" not in text and "Inner text" not in text


def test_an_unknown_charset_is_read_as_utf8_and_counted():
    raw = (b"From: bob@example.org\r\nSubject: x\r\nContent-Type: text/plain; charset=x-unknown-9\r\n\r\n"
           b"Caf\xc3\xa9 at noon.\r\n")
    result, warnings = read(raw)
    assert result.entry.text.endswith("Café at noon.") and warnings["unknown_charset"] == 1


def test_garbage_does_not_raise():
    result, _ = read(b"\x00\xff\xfe not a mail at all \r\n\r\n\xff")
    assert result.entry.role == "user"


# -- protocol parsers

def test_fetch_answers_are_split_per_message():
    dovecot = [(b'1 (UID 11 INTERNALDATE "03-Mar-2025 09:00:00 +0000" RFC822.SIZE 52 BODY[HEADER.FIELDS (MESSAGE-ID)] {19}',
                b"Message-ID: <a@x>\r\n"), b")",
               b"2 (FLAGS (\\Seen) UID 12)"]
    gmail = [(b"3 (X-GM-THRID 1789 UID 13 BODY[] {5}", b"hello"), b" INTERNALDATE \"3-Mar-2025 10:00:00 +0100\")"]
    assert imap.fetch_records(dovecot) == [(dovecot[0][0] + b" )", b"Message-ID: <a@x>\r\n"), (dovecot[2], None)]
    ((meta, literal),) = imap.fetch_records(gmail)
    assert literal == b"hello" and b"INTERNALDATE" in meta
    assert imap.internal_date(meta) == datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    assert imap.internal_date(b'INTERNALDATE " 5-Nov-2025 23:30:00 -0130"') == datetime(2025, 11, 6, 1, 0, tzinfo=UTC)
    assert imap.internal_date(b"UID 1") is None


def test_uid_sets_dates_and_folder_names_are_written_the_imap_way():
    assert imap.uid_set([9, 1, 2, 3, 7, 10]) == "1:3,7,9:10"
    assert imap.imap_date("2025-03-01") == "01-Mar-2025"
    assert imap.mailbox_name("INBOX") == '"INBOX"'
    assert imap.mailbox_name("[Gmail]/All Mail") == '"[Gmail]/All Mail"'
    assert imap.mailbox_name("Entwürfe") == '"Entw&APw-rfe"'
    assert imap.mailbox_name('R&D "x"') == '"R&-D \\"x\\""'
    assert imap.mailbox_name("日本語") == '"&ZeVnLIqe-"'


def test_a_refused_login_is_named_by_its_code_or_the_servers_words():
    assert imap._login_reason(imaplib.IMAP4.error(b"[AUTHENTICATIONFAILED] Authentication failed.")) == \
        "AUTHENTICATIONFAILED"
    gmail = imaplib.IMAP4.error(b"[ALERT] Application-specific password required: https://support.google.com/x")
    assert imap._login_reason(gmail).startswith("[ALERT] Application-specific password required")


def test_unknown_options_are_accepted():
    connector = imap.ImapConnector(host="imap.example.org", user="alice", password_env="MAIL_PASSWORD",
                                   name="mail-home", type="imap", trust="external", settle_minutes=30)
    assert (connector.port, connector.folders, connector.since, connector.ca_file) == (993, ["INBOX"], None, None)


def test_a_thread_is_keyed_as_one_document_even_when_cut_into_segments():
    """docs/design.md "Items": a thread's item is `<source>:<thread id>`; a thread too long for one segment
    keeps that key for its first part, and its later parts carry `#<first block>` (a session's
    segments all do)."""
    from connectors.base import Block, Unit
    from library.ingest.pipeline import item_keys, legacy_key
    from library.ingest.segments import segment

    blocks = [Block(index, "user", f"message {index} " + "x" * 600, T0) for index in range(4)]
    segments = segment("t1", blocks, 1_300)
    assert [seg.first_block for seg in segments] == [0, 2]
    thread = Unit(id="t1", ref="<a@example.org>", fingerprint="f", modified=T0, single_document=True)
    session = Unit(id="t1", ref="t1", fingerprint="f", modified=T0)
    assert item_keys("mail-home", thread, segments) == ["mail-home:t1", "mail-home:t1#2"]
    assert item_keys("mail-home", thread, segments[:1]) == ["mail-home:t1"]
    assert item_keys("agents", session, segments) == ["agents:t1#0", "agents:t1#2"]
    assert legacy_key("mail-home", thread) == "mail-home:t1#0"
