"""Mail as the summariser sees it: threading headers into threads, and one message into one entry.

This module owns everything about RFC 5322 messages that does not need a server, so that
it can be tested without one; `connectors/imap.py` owns the protocol.

Threads. A thread is a connected set of messages linked by `References` and `In-Reply-To`
(or, on Gmail, the messages sharing an `X-GM-THRID`). Its root is the *origin* of its
earliest message: the first id of that message's `References` (which by RFC 5322 is the
message that started the conversation), else the origin of its `In-Reply-To` parent, else
its own `Message-ID`. Later replies never change the root, and neither does the original
showing up after its replies, so the root — and the unit id made from it — stays the same
from run to run. A copy of a message in a second folder (Sent, Gmail's All Mail, a list
echo) is the same message: it is read once. A message without a `Message-ID` gets a
made-up one from a hash of its Date, From and Subject, which is as stable as those headers.

Messages. A message becomes one `user` entry: a header line (From, Date, and the Subject
when it differs from the previous message's) and the plain-text body. HTML-only mail is
turned into text with Beautiful Soup (the stdlib parser); quoted replies (`> …` lines, the
"On … wrote:" line before them, Outlook's "Original Message" tail, the quote elements of
HTML mail) and signatures (`-- ` and below, "Sent from my …") are removed, because the
earlier messages of the thread are entries of their own. Attachments are named, never read.
"""

import email
import email.errors
import email.header
import email.parser
import email.utils
import hashlib
import re
import warnings as py_warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning

from .base import Entry
from .text import safe_text

# What the `email` package raises on hostile or broken input. Its header parser has been
# seen to raise IndexError, AttributeError and even AssertionError on malformed headers.
PARSE_ERRORS = (ValueError, TypeError, IndexError, KeyError, LookupError, AttributeError, AssertionError,
                RecursionError, email.errors.MessageError)

MAX_MESSAGE_IDS = 100          # message ids kept in a thread's hints
MAX_PARTICIPANTS = 50
_MSG_ID = re.compile(r"<([^<>\s]+)>")
_SUBJECT_PREFIX = re.compile(r"^\s*((re|fwd?|aw|wg|sv|vs|tr|antw|rif|r)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- threading --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    """Where a copy of a message lives on the server."""

    folder: str
    uidvalidity: int
    uid: int


@dataclass
class Head:
    """One message as discovery knows it: threading headers, time and where its copies are."""

    message_id: str                         # "<id@host>", made up when the message has none
    references: tuple = ()                  # ids from References, in order
    in_reply_to: str | None = None
    time: datetime = _EPOCH                 # aware UTC
    subject: str = ""
    gm_thread: str | None = None            # Gmail's X-GM-THRID
    size: int = 0                           # RFC822.SIZE of the first copy
    locations: list = field(default_factory=list)   # [Location]


@dataclass
class Thread:
    root: str                               # the root Message-ID: original_ref
    key: str                                # what the unit id is made from (root, or the Gmail thread)
    heads: list                             # [Head], oldest first

    @property
    def id(self):
        return hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    @property
    def fingerprint(self):
        """Changes when a message joins or leaves, or a folder's UIDVALIDITY changes."""
        places = sorted((loc.folder, loc.uidvalidity, loc.uid) for head in self.heads for loc in head.locations)
        return hashlib.sha256(repr(places).encode("utf-8", "surrogatepass")).hexdigest()[:32]

    @property
    def modified(self):
        return max(head.time for head in self.heads)


def message_ids(value):
    """The `<…>` ids in a header value, in order, brackets kept."""
    if not isinstance(value, str):
        return []
    return [f"<{match}>" for match in _MSG_ID.findall(value)]


def parse_head(header_bytes, internal_time, *, size=0, gm_thread=None):
    """A `Head` from the raw header fields FETCHed at discovery (no location yet).

    `internal_time` is the server's INTERNALDATE; a message's time is the earlier of it and
    the Date header, so a forged future Date cannot keep a thread "settling" forever.
    """
    parsed = email.parser.BytesHeaderParser(policy=policy.compat32).parsebytes(header_bytes or b"")
    raw = {name: _header_str(parsed.get(name)) for name in ("message-id", "in-reply-to", "references",
                                                            "date", "from", "subject")}
    own = message_ids(raw["message-id"])
    references = tuple(message_ids(raw["references"]))
    replied = message_ids(raw["in-reply-to"])
    if own:
        message_id = own[0]
    else:
        basis = "\0".join((raw["date"], raw["from"], raw["subject"])).encode("utf-8", "surrogatepass")
        message_id = f"<{hashlib.sha256(basis).hexdigest()[:24]}@message-id.invalid>"
    times = [t for t in (header_time(raw["date"]), internal_time) if t is not None]
    return Head(message_id=message_id, references=tuple(r for r in references if r != message_id),
                in_reply_to=replied[-1] if replied and replied[-1] != message_id else None,
                time=min(times) if times else _EPOCH, subject=_decode_words(raw["subject"]),
                gm_thread=gm_thread, size=size)


def header_time(value):
    """A Date header as an aware UTC datetime; naive means UTC; None when unusable."""
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def threads(heads):
    """Group `Head`s (one per Message-ID) into `Thread`s, heads oldest first.

    Heads that carry a Gmail thread id are grouped by it; the others by the connected sets
    of References and In-Reply-To. Stable: the same heads give the same threads and roots.
    """
    by_id = {head.message_id: head for head in heads}
    groups = {}
    parent = {}

    def find(item):
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for head in by_id.values():
        if head.gm_thread:
            continue
        for other in (*head.references, head.in_reply_to):
            if other:
                union(head.message_id, other)
    for head in by_id.values():
        key = f"x-gm-thrid:{head.gm_thread}" if head.gm_thread else find(head.message_id)
        groups.setdefault(key, []).append(head)

    result = []
    for key, members in groups.items():
        members.sort(key=lambda h: (h.time, h.message_id))
        root = _origin(members[0], by_id)
        result.append(Thread(root=root, key=key if key.startswith("x-gm-thrid:") else root, heads=members))
    result.sort(key=lambda thread: thread.root)
    return result


def _origin(head, by_id):
    seen = set()
    while head.message_id not in seen:
        seen.add(head.message_id)
        if head.references:
            return head.references[0]
        if not head.in_reply_to:
            return head.message_id
        parent = by_id.get(head.in_reply_to)
        if parent is None:
            return head.in_reply_to
        head = parent
    return head.message_id   # a loop of In-Reply-To headers: any member is as good as another


# --- one message ------------------------------------------------------------------------------

@dataclass
class Message:
    """What one parsed message contributes to its thread."""

    entry: Entry
    subject: str
    participants: list      # lower-case addresses, From first


def read_message(raw, time, warnings, *, previous_subject=None):
    """A `Message` for the raw RFC 5322 bytes; bad parts are skipped and counted in `warnings`.

    Raises one of `PARSE_ERRORS` when the message cannot be parsed at all.
    """
    msg = email.message_from_bytes(raw, policy=policy.default)
    subject = " ".join(_safe_header(msg, "subject", warnings).split())
    sender = _safe_header(msg, "from", warnings)
    participants = _addresses(msg, warnings)
    line = [f"From: {' '.join(sender.split()) or 'unknown'}", f"Date: {time:%Y-%m-%d %H:%M} UTC"]
    if subject and normal_subject(subject) != normal_subject(previous_subject or ""):
        line.append(f"Subject: {subject}")
    body = _body(msg, warnings)
    attachments = [f"[attachment: {name}]" for name in _attachment_names(msg)]
    text = "\n\n".join(part for part in (" | ".join(line), body, "\n".join(attachments)) if part)
    return Message(entry=Entry("user", safe_text(text), time), subject=subject, participants=participants)


def normal_subject(subject):
    """The subject without reply and forward prefixes (`Re:`, `Fwd:`, `AW:`, …)."""
    return " ".join(_SUBJECT_PREFIX.sub("", subject or "").split())


def _safe_header(msg, name, warnings):
    try:
        value = msg.get(name)
        return str(value) if value is not None else ""
    except PARSE_ERRORS:
        warnings["bad_header"] += 1
        return ""


def _addresses(msg, warnings):
    found = []
    for name in ("from", "to", "cc"):
        try:
            header = msg.get(name)
            addresses = getattr(header, "addresses", ()) if header is not None else ()
            found.extend(address.addr_spec.lower() for address in addresses if address.addr_spec)
        except PARSE_ERRORS:
            warnings["bad_header"] += 1
    return list(dict.fromkeys(a for a in found if "@" in a))


def _body(msg, warnings):
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = _text_of(part, warnings)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    return clean_text(text)


def _text_of(part, warnings):
    try:
        return part.get_content()
    except LookupError:                      # an unknown charset: read it as UTF-8
        warnings["unknown_charset"] += 1
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", "replace")


def _attachment_names(msg):
    names = []
    _collect_attachments(msg, names, top=True)
    return names


def _collect_attachments(part, names, *, top=False):
    if part.get_content_type() == "message/rfc822" and not top:
        inner = part.get_payload()
        subject = inner[0].get("subject", "") if isinstance(inner, list) and inner else ""
        names.append(part.get_filename() or f"message {' '.join(str(subject).split())}".strip())
        return  # a forwarded message as an attachment is named, not read
    if part.is_multipart():
        for sub in part.iter_parts():
            _collect_attachments(sub, names)
        return
    disposition = part.get_content_disposition()
    filename = part.get_filename()
    if disposition == "attachment" or (filename and disposition != "inline"):
        names.append(" ".join(str(filename).split()) if filename else part.get_content_type())


# --- text -------------------------------------------------------------------------------------

_ATTRIBUTION = re.compile(
    r"^(on|am|le|el|op|il|em|den|på|w dniu)\b.{0,400}\b(wrote|writes|schrieb|a écrit|escribió|schreef|ha scritto|"
    r"escreveu|skrev|napisał)\s*:$", re.IGNORECASE | re.DOTALL)
_OUTLOOK_ORIGINAL = re.compile(r"^\s*-{3,}\s*(original message|ursprüngliche nachricht|message d'origine)\s*-{3,}\s*$",
                               re.IGNORECASE)
_OUTLOOK_RULE = re.compile(r"^\s*_{10,}\s*$")
_OUTLOOK_FROM = re.compile(r"^\s*(from|von|de|van):\s", re.IGNORECASE)
_MOBILE_SIGNATURE = re.compile(r"^\s*(sent from my \w[\w ]*|get outlook for \w+|von meinem \w[\w ]* gesendet)\s*\.?\s*$",
                               re.IGNORECASE)


def clean_text(text):
    """Plain text without quoted replies, their attribution lines and the signature."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = _cut_outlook_tail(lines)
    kept = []
    for line in lines:
        if line.lstrip().startswith(">"):
            _drop_attribution(kept)
            continue
        kept.append(line.rstrip())
    _drop_attribution(kept)              # "On … wrote:" with the quote already gone (HTML mail)
    kept = _cut_signature(kept)
    return _squeeze(kept)


def _cut_outlook_tail(lines):
    for n, line in enumerate(lines):
        if _OUTLOOK_ORIGINAL.match(line):
            return lines[:n]
        if _OUTLOOK_RULE.match(line) and any(_OUTLOOK_FROM.match(after) for after in lines[n + 1:n + 3]):
            return lines[:n]
    return lines


def _drop_attribution(kept):
    """Remove an "On … wrote:" line (possibly wrapped over up to three lines) ending `kept`."""
    end = len(kept)
    while end and not kept[end - 1].strip():
        end -= 1
    for size in (1, 2, 3):
        start = end - size
        if start < 0:
            return
        candidate = " ".join(line.strip() for line in kept[start:end])
        if any(not line.strip() for line in kept[start:end]):
            return
        if _ATTRIBUTION.match(candidate):
            del kept[start:]
            return


def _cut_signature(lines):
    for n in range(len(lines) - 1, -1, -1):
        if lines[n] in ("-- ", "--"):
            lines = lines[:n]
            break
    while lines and (not lines[-1].strip() or _MOBILE_SIGNATURE.match(lines[-1])):
        lines = lines[:-1]
    return lines


def _squeeze(lines):
    """Join lines, at most one blank line in a row, no blank edges."""
    out = []
    for line in lines:
        if line.strip() or (out and out[-1].strip()):
            out.append(line if line.strip() else "")
    return "\n".join(out).strip()


# Elements dropped with their content: not text, or the quoted earlier messages and the
# signature blocks that Gmail, Apple Mail, Thunderbird, Yahoo and Outlook write.
_DROPPED = ("script", "style", "head", "title", "template", "noscript", "svg", "object", "iframe")
_QUOTED = ("blockquote, div.gmail_quote, .gmail_signature, .gmail_signature_prefix, .moz-cite-prefix, "
           ".moz-signature, .yahoo_quoted, #Signature")
_OUTLOOK_REPLY = "#divRplyFwdMsg, #appendonsend"
# Paragraph-like elements are set apart by a blank line, line-like ones by a line break.
_PARAGRAPHS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "pre", "hr", "dl", "section",
               "article", "header", "footer", "address", "center", "form")
_LINES = ("div", "li", "tr", "dt", "dd")
_PARAGRAPH_BREAK = "\x00"


def html_to_text(html):
    """The readable text of an HTML mail body: paragraphs and line breaks kept, list items
    as `- …`, link texts without their URLs, quoted replies and signatures dropped."""
    with py_warnings.catch_warnings():
        # A body that is only a URL or starts with an XML declaration is still a body.
        py_warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        py_warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(html.replace(_PARAGRAPH_BREAK, ""), "html.parser")
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    for tag in soup.select(_OUTLOOK_REPLY):
        if tag.decomposed:
            continue
        for sibling in tag.find_next_siblings():
            sibling.decompose()
        tag.decompose()
    for tag in soup.select(_QUOTED):
        if not tag.decomposed:
            tag.decompose()
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    for tag in soup.find_all("li"):
        tag.insert(0, "- ")
    for tag in soup.find_all(_LINES):
        tag.insert_before("\n")
        tag.insert_after("\n")
    for tag in soup.find_all(_PARAGRAPHS):
        tag.insert_before(_PARAGRAPH_BREAK)
        tag.insert_after(_PARAGRAPH_BREAK)
    paragraphs = []
    for chunk in soup.get_text().split(_PARAGRAPH_BREAK):
        lines = [" ".join(line.split()) for line in chunk.split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            paragraphs.append(text)
    return "\n\n".join(paragraphs)


def _header_str(value):
    return "" if value is None else str(value)


def _decode_words(value):
    """An RFC 2047 encoded header (`=?utf-8?q?…?=`) as text; the raw value when it cannot be decoded."""
    if not value:
        return ""
    try:
        return " ".join(str(email.header.make_header(email.header.decode_header(value))).split())
    except PARSE_ERRORS:
        return " ".join(value.split())
