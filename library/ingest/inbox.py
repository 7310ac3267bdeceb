"""Sessions uploaded by devices (docs/design.md "Device uploads"), kept in the inbox until their `upload` connector
(`library.ingest.upload_connector`) reads them; `receive()` asks the worker for that run.

`receive()` takes an upload's bytes, parses them at once with the same reader as the
folder connector of that agent, redacts every entry and hint, and stores only that — never
the raw upload — in one inbox row per (source, session). A newer upload of a session
replaces the row and bumps its version, which is the `upload` connector's cursor. Anything
wrong (too large, not gzip, not UTF-8, not a transcript) raises before anything is stored.

Uploads never go backwards. A device uploads the same growing transcript several times
(after turns, at the end), from detached processes that can finish in any order, so a late
upload may carry an older copy. Transcripts only grow (agents append to them), so the
length of the transcript (bytes after decompression) orders the copies: an upload replaces
what the inbox holds only when it is longer. A shorter or equally long one is not stored —
the answer says so (`stored: false`), it is not an error. `ended` only goes one way: once an
upload said the session ended, the session stays ended, whatever arrives later; an ended
upload of the transcript the inbox already holds marks it ended.

Before anything else, the author's markers apply (library.ingest.markers): private spans are
hidden before the entries are redacted and stored, and a session that asks to be kept out
leaves only a row saying so (its size, no text). A forgotten session (library.forget) and one
whose working folder or project is excluded (library.ingest.exclusions) are not stored.
"""

import codecs
import gzip
import re
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from connectors import registry
from connectors.base import Reading
from library import forget
from library.errors import UploadRejected
from library.ingest import configured, markers, projects, redact
from library.ingest.exclusions import Exclusions
from library.models import InboxSession

AGENTS = ("claude_code", "codex")
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_CHUNK = 1 << 20


def max_upload_bytes():
    return settings.JEZERO_MAX_UPLOAD_BYTES


def _decompressed(chunks, gzipped, limit, out):
    """Write the body to `out`, gunzipping on the fly every member of a multi-member gzip
    file (as `gzip -d` does); 413 past `limit` bytes of output; 422 for a truncated stream or
    anything after a member that is not another member."""
    written = 0

    def write(data):
        nonlocal written
        written += len(data)
        if written > limit:
            raise UploadRejected(f"the transcript is larger than {limit:,} bytes", 413)
        out.write(data)

    if not gzipped:
        for chunk in chunks:
            write(chunk)
        return written
    inflater, fed, members = zlib.decompressobj(16 + zlib.MAX_WBITS), False, 0
    for chunk in chunks:
        while chunk:
            try:
                write(inflater.decompress(chunk, limit + 1 - written))
                while inflater.unconsumed_tail:
                    write(inflater.decompress(inflater.unconsumed_tail, limit + 1 - written))
            except zlib.error:
                if members:
                    raise UploadRejected("the body has data after its gzip stream", 422) from None
                raise
            fed, chunk = True, b""
            if inflater.eof:   # a member ended: whatever follows must be the next one
                members, chunk = members + 1, inflater.unused_data
                inflater, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    if fed or not members:
        write(inflater.flush())
        if not inflater.eof:
            raise UploadRejected("the gzip stream is truncated", 422)
    return written


def _check_utf8(path):
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise UploadRejected(f"the transcript is not UTF-8 text (bad byte at offset {offset + exc.start})",
                                     422) from None
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise UploadRejected("the transcript is not UTF-8 text (it ends inside a character)", 422) from None


def parse(agent, session_id, chunks, *, gzipped, limit):
    """Read an upload with the agent's own reader: (Reading, size). Raises UploadRejected."""
    if agent not in AGENTS:
        raise UploadRejected(f"agent: {agent!r} is not one of {', '.join(AGENTS)}", 422)
    if not _SESSION_ID.match(session_id or ""):
        raise UploadRejected("session_id: letters, digits, '.', '_', '-' (at most 200)", 422)
    with tempfile.TemporaryDirectory(prefix="jezero-upload-") as folder:
        path = Path(folder) / f"{session_id}.jsonl"
        with open(path, "wb") as out:
            try:
                size = _decompressed(chunks, gzipped, limit, out)
            except (zlib.error, gzip.BadGzipFile) as exc:
                raise UploadRejected(f"the body is not valid gzip ({exc})", 422) from None
        if size == 0:
            raise UploadRejected("the transcript is empty", 422)
        _check_utf8(path)
        connector, unit = registry.for_file(agent, path)
        reading = connector.read(unit)
    if not reading.entries:
        bad = sum(reading.warnings.values())
        raise UploadRejected(f"no {agent} transcript found in the upload"
                             + (f" ({bad} line(s) skipped: {', '.join(sorted(reading.warnings))})" if bad else ""), 422)
    return reading, size


@dataclass(frozen=True)
class Receipt:
    """What became of an upload. `row` is what the inbox holds for the session afterwards;
    `stored` says whether this upload's transcript is what it holds (False: the inbox held a
    longer copy, or the same one, and kept it); `written`, whether this upload wrote a new
    version; `detail` says why not, in words."""

    row: InboxSession
    stored: bool
    written: bool = False  # this upload wrote a new version of the row
    detail: str = ""

    @property
    def created(self):
        return self.written and self.row.version == 1

    def as_dict(self):
        row = self.row
        return {"source": row.source, "session_id": row.session_id, "agent": row.agent, "version": row.version,
                "entries": len(row.entries), "size": row.size, "replaced": self.written and row.version > 1,
                "stored": self.stored, "ended": row.ended, "detail": self.detail or None}


def receive(caller, agent, session_id, chunks, *, gzipped=False, cwd=None, git_remote=None, git_branch=None,
            project=None, ended=False):
    """Parse, redact and store an upload for `caller` (who has the upload scope), unless the
    inbox already holds a copy of the session at least as long (see the module's docstring).
    Returns a Receipt. Nothing is stored unless everything succeeded."""
    source = caller.upload_source
    if not source:
        raise UploadRejected("this client has no upload source: set one with `jezero client`", 403)
    if forget.is_forgotten(source, session_id):
        return Receipt(_held(source, session_id, agent), stored=False,
                       detail="not stored: this session was forgotten (`jezero forget`)")
    reading, size = parse(agent, session_id, chunks, gzipped=gzipped, limit=max_upload_bytes())
    sent = {"cwd": cwd, "git_remote": git_remote, "git_branch": git_branch, "device_project": project}
    marked = markers.apply(Reading(entries=reading.entries,
                                   hints={**reading.hints, **{key: value for key, value in sent.items() if value}}))
    if marked.kept_out:
        # Nothing of it is kept: a row that says so (so that the run counts it, drops what was
        # stored of it before, and a shorter upload is not taken), and the size.
        entries, hints = [["user", markers.SKIP_LINE, None]], {}
    else:
        config = configured.find(source) or {}
        reason = Exclusions(config).reason(marked.reading.hints, projects.project_for(marked.reading.hints, source))
        if reason:
            return Receipt(_held(source, session_id, agent), stored=False, detail=f"not stored: {reason} "
                                                                                  "(configured exclusions)")
        redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
        entries = [[e.role, redactor.redact(e.text), e.time.isoformat() if e.time else None]
                   for e in marked.reading.entries]
        hints = redactor.redact_value(marked.reading.hints)
    # Decided inside the transaction (IMMEDIATE: one writer at a time), against the row as it
    # is now, so two uploads of a session racing each other cannot both win.
    with transaction.atomic():
        row = InboxSession.objects.filter(source=source, session_id=session_id).first()
        if row is not None and size <= row.size:
            return _kept(row, size, ended)
        if row is None:
            row = InboxSession(source=source, session_id=session_id, version=0)
        row.agent, row.entries, row.hints, row.ended = agent, entries, hints, row.ended or ended
        row.version += 1
        row.uploaded_by, row.received_at, row.size = caller.name, timezone.now(), size
        row.save()
        transaction.on_commit(lambda: _read_soon(source))
    return Receipt(row, stored=True, written=True)


READ_DELAY_SECONDS = 2   # a burst of uploads (a turn's, then the session's end) makes one run, not several


def _read_soon(source):
    """Have the worker read this source's new uploads in a moment (library.tasks.ingest_uploads),
    when an enabled upload connector of that name is there to read them."""
    from library import tasks

    config = configured.find(source)
    if config is not None and config["type"] == "upload" and config["enabled"]:
        tasks.ingest_uploads.schedule((source,), delay=READ_DELAY_SECONDS)


def _held(source, session_id, agent):
    """The inbox row of a session that an upload does not change (unsaved when there is none)."""
    return (InboxSession.objects.filter(source=source, session_id=session_id).first()
            or InboxSession(source=source, session_id=session_id, agent=agent, version=0))


def _kept(row, size, ended):
    """An upload no longer than what the inbox holds: keep the row; an ended upload of the
    same transcript marks the session ended (without a new version: the text is the same)."""
    if size == row.size:
        if ended and not row.ended:
            row.ended = True
            row.save(update_fields=["ended"])
            return Receipt(row, stored=True, detail=f"the inbox holds this transcript ({size:,} bytes, version "
                                                    f"{row.version}); the session is now marked ended")
        return Receipt(row, stored=False, detail=f"not stored: the inbox already holds this transcript "
                                                 f"({size:,} bytes, version {row.version})")
    return Receipt(row, stored=False, detail=f"not stored: the inbox holds a newer copy of this session "
                                             f"({row.size:,} bytes, version {row.version}) than this upload "
                                             f"({size:,} bytes)")
