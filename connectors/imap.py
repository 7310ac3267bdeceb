"""The `imap` connector type: the threads of an IMAP mailbox, read over TLS (Gmail with an app password too).

Units. One unit per thread (see `connectors/mail.py` for how messages are threaded): its id
is a short hash of the thread's root Message-ID (of Gmail's `X-GM-THRID` when the server
advertises `X-GM-EXT-1`), its original_ref the root Message-ID. A thread is one document
(`Unit.single_document`), so its item's key is `<source>:<thread id>` (docs/design.md "Items"). Discovery logs in, EXAMINEs
each configured folder (read-only), reads its UIDVALIDITY, searches `SINCE` the configured
date and FETCHes only the threading headers, INTERNALDATE and size of each message. What it
learnt is kept, so `read()` fetches exactly the messages of one thread, with `BODY.PEEK[]`
so that nothing is marked as read. A message larger than 2 MiB is fetched partially: its
text comes first in practice, and its attachments are only named anyway.

Cursor. A unit's fingerprint is a hash of the sorted (folder, UIDVALIDITY, UID) of its
messages, so the pipeline's per-unit cursor is "UIDVALIDITY + UIDs per folder": a new message
changes the fingerprint of its own thread only, and only that thread is read again. When a
server changes a folder's UIDVALIDITY (the folder was recreated, or the server's index was
rebuilt), every UID in it is void: all of its threads get new fingerprints and are re-read,
but their unit ids come from Message-IDs, not UIDs, so they map onto the same items, which are
updated in place rather than duplicated — and, their text being unchanged, cost no model call.

Errors. A missing password variable, an unreachable server, an untrusted certificate, a
refused login or a missing folder make `discover()` raise `UnitError` with a message that
names the server and the cause (never the password). `read()` raises `UnitError` when the
server cannot be reached or a folder changed since discovery; a message that vanished or
cannot be parsed is skipped and counted in the reading's warnings. The connection opened by
discovery is reused by `read()`, reopened once if the server dropped it, and closed by
`close()` or when the connector is garbage-collected.
"""

import base64
import imaplib
import os
import re
import socket
import ssl
import weakref
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from . import mail
from .base import Reading, Unit, UnitError

TYPE = "imap"
MAX_MESSAGE_BYTES = 2 * 1024 * 1024    # a bigger message is fetched up to here
_FETCH_BATCH_BYTES = 8 * 1024 * 1024   # bodies fetched in one command, about
_HEADER_BATCH = 500                    # messages whose headers are fetched in one command
_HEADER_FIELDS = "MESSAGE-ID IN-REPLY-TO REFERENCES DATE FROM SUBJECT"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_FETCH_START = re.compile(rb"^\d+ \(")
_UID = re.compile(rb"\bUID (\d+)")
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_GM_THRID = re.compile(rb"\bX-GM-THRID (\d+)")
_INTERNALDATE = re.compile(rb'\bINTERNALDATE "\s*(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)"')
_RESPONSE_CODE = re.compile(r"^\[([A-Z][A-Z0-9-]*)[^\]]*\]\s*")


class ImapConnector:
    """Reads the threads of the IMAP `folders` of `user` at `host`. The password is read from
    the environment variable named by `password_env` when connecting. Unknown keyword options
    (the common connector options) are accepted and ignored."""

    type_name = TYPE

    def __init__(self, *, host, user, password_env, port=993, folders=("INBOX",), since=None, ca_file=None,
                 timeout=60, **options):
        self.host, self.port, self.user = host, int(port), user
        self.password_env = password_env
        self.folders = list(folders or ("INBOX",))
        self.since = since
        self.ca_file = ca_file
        self.timeout = timeout
        self.gmail = False
        self._threads = {}         # unit id → mail.Thread, from the last discovery
        self._imap = None
        self._selected = None      # (folder, uidvalidity) of the selected folder
        self._closer = None

    # -- the contract

    def discover(self):
        """Yield one `Unit` per thread in the configured folders (headers only).
        Raises `UnitError` when the server cannot be used (see the module docstring)."""
        heads = {}
        imap = self._connection()
        try:
            for folder in self.folders:
                uidvalidity = self._select(imap, folder)
                uids = self._search(imap)
                for chunk in _chunks(uids, _HEADER_BATCH):
                    for head, uid in self._fetch_heads(imap, chunk):
                        location = mail.Location(folder, uidvalidity, uid)
                        known = heads.get(head.message_id)
                        if known is None:
                            head.locations.append(location)
                            heads[head.message_id] = head
                        else:
                            known.locations.append(location)
        except (imaplib.IMAP4.abort, OSError) as exc:
            self.close()
            raise UnitError(f"{self._server()}: connection lost ({_reason(exc)})") from exc
        except imaplib.IMAP4.error as exc:
            raise UnitError(f"{self._server()}: {_server_text(exc)}") from exc
        threads = mail.threads(heads.values())
        self._threads = {thread.id: thread for thread in threads}
        for thread in threads:
            yield Unit(id=thread.id, ref=thread.root, fingerprint=thread.fingerprint, modified=thread.modified,
                       single_document=True)

    def read(self, unit):
        """The thread's messages as entries (oldest first) with its hints; raises `UnitError`
        when the thread is unknown or the server cannot be read."""
        thread = self._threads.get(unit.id)
        if thread is None:
            raise UnitError(f"{unit.ref}: not found by this connector's last discovery")
        reading = Reading()
        bodies = self._with_retry(lambda imap: self._fetch_bodies(imap, thread))
        previous_subject, subjects, participants, folders = None, [], [], []
        for head in thread.heads:
            raw = bodies.get(head.message_id)
            if raw is None:                  # expunged since discovery
                reading.warnings["message_gone"] += 1
                continue
            if head.size > MAX_MESSAGE_BYTES:
                reading.warnings["message_truncated"] += 1
            try:
                message = mail.read_message(raw, head.time, reading.warnings, previous_subject=previous_subject)
            except mail.PARSE_ERRORS:
                reading.warnings["bad_message"] += 1
                continue
            reading.entries.append(message.entry)
            previous_subject = message.subject or previous_subject
            subjects.append(message.subject)
            participants.extend(message.participants)
            folders.extend(location.folder for location in head.locations)
        reading.hints = _hints(thread, subjects, participants, folders)
        return reading

    def close(self):
        """Log out and drop the connection; the next call connects again. Idempotent."""
        if self._closer is not None:
            self._closer()
        self._closer, self._imap, self._selected = None, None, None

    # -- connecting

    def _server(self):
        return self.host if self.port == 993 else f"{self.host}:{self.port}"

    def _connection(self):
        if self._imap is not None:
            return self._imap
        password = os.environ.get(self.password_env)
        if not password:
            raise UnitError(f"{self._server()}: the environment variable {self.password_env} is not set "
                            f"(it holds the password of {self.user})")
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise UnitError(f"{self._server()}: cannot read ca_file {self.ca_file} ({_reason(exc)})") from exc
        try:
            imap = imaplib.IMAP4_SSL(self.host, self.port, ssl_context=context, timeout=self.timeout)
        except ssl.SSLCertVerificationError as exc:
            raise UnitError(f"{self._server()}: certificate not trusted ({exc.verify_message}); "
                            "for a private certificate set ca_file") from exc
        except socket.gaierror as exc:
            raise UnitError(f"{self._server()}: unknown host ({_reason(exc)})") from exc
        except (OSError, imaplib.IMAP4.error) as exc:   # refused, timed out, TLS failed, no greeting
            raise UnitError(f"{self._server()}: cannot connect ({_reason(exc)})") from exc
        closer = weakref.finalize(self, _logout, imap)
        try:
            if password.isascii():
                imap.login(self.user, password)
            else:  # LOGIN is ASCII-only in imaplib; SASL PLAIN carries UTF-8
                imap.authenticate("PLAIN", lambda _challenge: f"\0{self.user}\0{password}".encode())
            capabilities = imap.capability()[1]
        except imaplib.IMAP4.abort as exc:
            closer()
            raise UnitError(f"{self._server()}: connection lost while logging in ({_reason(exc)})") from exc
        except imaplib.IMAP4.error as exc:
            closer()
            raise UnitError(f"{self._server()}: login failed ({_login_reason(exc)})") from exc
        except OSError as exc:
            closer()
            raise UnitError(f"{self._server()}: connection lost while logging in ({_reason(exc)})") from exc
        words = b" ".join(c for c in capabilities if isinstance(c, bytes)).upper().split()
        self.gmail = b"X-GM-EXT-1" in words
        self._imap, self._closer, self._selected = imap, closer, None
        return imap

    def _with_retry(self, work):
        """`work(imap)`, once more on a fresh connection if the server dropped the old one."""
        for attempt in (1, 2):
            try:
                return work(self._connection())
            except (imaplib.IMAP4.abort, OSError) as exc:
                self.close()
                if attempt == 2:
                    raise UnitError(f"{self._server()}: connection lost ({_reason(exc)})") from exc
            except imaplib.IMAP4.error as exc:
                raise UnitError(f"{self._server()}: {_server_text(exc)}") from exc
        raise AssertionError("unreachable")

    # -- protocol steps

    def _select(self, imap, folder):
        """EXAMINE `folder` (read-only) and return its UIDVALIDITY."""
        typ, data = imap.select(mailbox_name(folder), readonly=True)
        if typ != "OK":
            raise UnitError(f"{self._server()}: cannot open folder {folder!r} ({_server_text(data)})")
        value = imap.response("UIDVALIDITY")[1]
        try:
            uidvalidity = int(value[-1])
        except (TypeError, ValueError, IndexError):
            raise UnitError(f"{self._server()}: folder {folder!r} has no UIDVALIDITY") from None
        self._selected = (folder, uidvalidity)
        return uidvalidity

    def _search(self, imap):
        criteria = ("SINCE", imap_date(self.since)) if self.since else ("ALL",)
        typ, data = imap.uid("SEARCH", *criteria)
        if typ != "OK":
            raise imaplib.IMAP4.error(_server_text(data))
        return sorted({int(n) for part in data if isinstance(part, bytes) for n in part.split() if n.isdigit()})

    def _fetch_heads(self, imap, uids):
        items = f"(UID INTERNALDATE RFC822.SIZE{' X-GM-THRID' if self.gmail else ''} " \
                f"BODY.PEEK[HEADER.FIELDS ({_HEADER_FIELDS})])"
        typ, data = imap.uid("FETCH", uid_set(uids), items)
        if typ != "OK":
            raise imaplib.IMAP4.error(_server_text(data))
        for meta, literal in fetch_records(data):
            uid = _UID.search(meta)
            if uid is None or b"INTERNALDATE" not in meta:
                continue   # an unsolicited FETCH (a flag change) rides along with the answer
            size = _SIZE.search(meta)
            thread = _GM_THRID.search(meta)
            head = mail.parse_head(literal or b"", internal_date(meta), size=int(size.group(1)) if size else 0,
                                   gm_thread=thread.group(1).decode() if thread else None)
            yield head, int(uid.group(1))

    def _fetch_bodies(self, imap, thread):
        """{message id: raw bytes} for the thread's messages, each from its first copy."""
        wanted = defaultdict(list)      # (folder, uidvalidity) → [(uid, head)]
        for head in thread.heads:
            location = head.locations[0]
            wanted[(location.folder, location.uidvalidity)].append((location.uid, head))
        bodies = {}
        for (folder, uidvalidity), members in wanted.items():
            if self._selected != (folder, uidvalidity):
                if self._select(imap, folder) != uidvalidity:
                    raise UnitError(f"{self._server()}: folder {folder!r} changed since discovery (UIDVALIDITY); "
                                    "the next run reads it again")
            by_uid = {uid: head for uid, head in members}
            for batch in _body_batches(members):
                typ, data = imap.uid("FETCH", uid_set(batch), f"(UID BODY.PEEK[]<0.{MAX_MESSAGE_BYTES}>)")
                if typ != "OK":
                    raise imaplib.IMAP4.error(_server_text(data))
                for meta, literal in fetch_records(data):
                    uid = _UID.search(meta)
                    head = by_uid.get(int(uid.group(1))) if uid else None
                    if head is not None and literal is not None:
                        bodies[head.message_id] = literal
        return bodies


# --- helpers ----------------------------------------------------------------------------------

def _hints(thread, subjects, participants, folders):
    """title_hint (the first subject, without `Re:`), participants, folders and message ids."""
    hints = {}
    subject = next(filter(None, map(mail.normal_subject, [*subjects, *(h.subject for h in thread.heads)])), "")
    if subject:
        hints["title_hint"] = subject
    if participants:
        hints["participants"] = list(dict.fromkeys(participants))[: mail.MAX_PARTICIPANTS]
    if folders:
        hints["folders"] = list(dict.fromkeys(folders))
    hints["message_ids"] = [head.message_id for head in thread.heads][: mail.MAX_MESSAGE_IDS]
    return hints


def _logout(imap):
    """Close a connection quietly: it may already be dead, and this can run at garbage collection."""
    try:
        imap.logout()
    except (imaplib.IMAP4.error, OSError):
        try:
            imap.shutdown()
        except OSError:
            pass


def fetch_records(data):
    """[(meta bytes, literal bytes or None)] from imaplib's FETCH answer, one per message.

    imaplib hands a message with a literal as `(b'7 (UID 7 … {123}', literal)` followed by
    the rest of the line (`b')'`, or `b' UID 7)'` when the server puts items after the
    literal); a message without one as a bare `b'7 (UID 7 FLAGS ())'`.
    """
    records = []
    for part in data:
        if isinstance(part, tuple) and len(part) == 2:
            records.append([part[0], part[1]])
        elif isinstance(part, bytes):
            if _FETCH_START.match(part):
                records.append([part, None])
            elif records:
                records[-1][0] += b" " + part
    return [(meta, literal) for meta, literal in records]


def internal_date(meta):
    """The INTERNALDATE in a FETCH answer as an aware UTC datetime, or None."""
    match = _INTERNALDATE.search(meta)
    if match is None:
        return None
    day, month, year, hour, minute, second, sign, off_h, off_m = (g.decode() for g in match.groups())
    if month.title() not in _MONTHS:
        return None
    try:
        local = datetime(int(year), _MONTHS.index(month.title()) + 1, int(day), int(hour), int(minute), int(second),
                         tzinfo=UTC)
    except ValueError:
        return None
    offset = (int(off_h) * 60 + int(off_m)) * (1 if sign == "+" else -1)
    return local - timedelta(minutes=offset)


def imap_date(day):
    """`2025-03-01` → `01-Mar-2025` (IMAP's date, not the locale's)."""
    year, month, date = (int(part) for part in day.split("-"))
    return f"{date:02d}-{_MONTHS[month - 1]}-{year}"


def uid_set(uids):
    """`[1, 2, 3, 7, 9, 10]` → `1:3,7,9:10`."""
    ranges, start, last = [], None, None
    for uid in sorted(uids):
        if start is None:
            start = last = uid
        elif uid == last + 1:
            last = uid
        else:
            ranges.append((start, last))
            start = last = uid
    if start is not None:
        ranges.append((start, last))
    return ",".join(str(a) if a == b else f"{a}:{b}" for a, b in ranges)


def mailbox_name(folder):
    """A folder name as an IMAP quoted string in modified UTF-7 (RFC 3501 §5.1.3)."""
    out, pending = [], []

    def flush():
        if pending:
            encoded = base64.b64encode("".join(pending).encode("utf-16-be")).rstrip(b"=").decode("ascii")
            out.append("&" + encoded.replace("/", ",") + "-")
            pending.clear()

    for char in folder:
        if 0x20 <= ord(char) <= 0x7E:
            flush()
            out.append("&-" if char == "&" else char)
        else:
            pending.append(char)
    flush()
    name = "".join(out)
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _chunks(items, size):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _body_batches(members):
    """UIDs to fetch together: about `_FETCH_BATCH_BYTES` of mail per command."""
    batch, total = [], 0
    for uid, head in sorted(members, key=lambda member: member[0]):
        size = min(head.size or 0, MAX_MESSAGE_BYTES)
        if batch and total + size > _FETCH_BATCH_BYTES:
            yield batch
            batch, total = [], 0
        batch.append(uid)
        total += size
    if batch:
        yield batch


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _server_text(value):
    """The server's words from an imaplib error or a response's data, trimmed."""
    if isinstance(value, imaplib.IMAP4.error):
        value = value.args[0] if value.args else ""
    if isinstance(value, list):
        value = b" ".join(part for part in value if isinstance(part, bytes))
    return " ".join(_text(value).split())[:300] or "no reason given"


def _login_reason(exc):
    """`AUTHENTICATIONFAILED` for a coded refusal, else the server's text (Gmail explains
    in an `[ALERT]` that an app password is needed)."""
    text = _server_text(exc)
    match = _RESPONSE_CODE.match(text)
    if match and match.group(1) != "ALERT":
        return match.group(1)
    return text


def _reason(exc):
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split())[:300] or type(exc).__name__
