"""Clients: agents and devices that call the API and MCP with a bearer token (docs/design.md "Access").

A token looks like `jz_<id>_<secret>`. Only its sha256 is stored; the id finds the row and
the hashes are compared in constant time. `Caller` is what every read path receives: the
allowed-source globs and scopes of a client, or of a logged-in person (who may read
everything). `bearer()` reads the token from an `Authorization` header and `authenticate()`
checks it, for the API, its docs and the MCP endpoint alike.

Every route asks `check()` (the MCP router in two halves, `recall()` on its event loop
first): each server process keeps the callers it authenticated for `KEPT_SECONDS`, so an
agent's next call is checked with no database query, and on MCP with no thread (docs/design.md "Clients and tokens":
1.4 ms of server CPU an MCP call, bench/RESULTS.md). Any change to any client (created,
edited, revoked) replaces the file `<data>/clients.changed`, at once and when its
transaction commits, and every process compares that file's identity on every call: a
revoked token is refused by the next request, in every process.
"""

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from library.access import people
from library.errors import BadInput, NotFound
from library.filters import parse_globs
from library.ingest import configured
from library.models import Client
from library.vocabulary import SOURCE_NAME_RE

TOKEN_PREFIX = "jz_"
_LAST_USED_EVERY = timedelta(minutes=1)  # write last_used at most this often per client
# RFC 6750: `Bearer` (a scheme is case-insensitive), one or more spaces, the token. Tabs between
# and white space around the value are taken too, as some clients send them.
_BEARER_RE = re.compile(r"[ \t]*bearer[ \t]+([^ \t]+)[ \t]*", re.IGNORECASE)


@dataclass(frozen=True)
class Caller:
    name: str
    sources: tuple = ()
    scopes: frozenset = field(default_factory=frozenset)
    upload_source: str = ""
    person: bool = False

    def can(self, scope):
        return scope in self.scopes


def person(user):
    """The Caller for a logged-in person (the API read through a browser session): reads the
    sources `people.allowed_sources` gives that person, as every page does."""
    return Caller(name=user.get_username(), sources=people.allowed_sources(user), scopes=frozenset({"read"}),
                  person=True)


def _digest(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _parse_list(value, what):
    items = [part.strip() for part in (value or "").split(",") if part.strip()] if isinstance(value, str) else list(value or [])
    if not all(isinstance(item, str) and item for item in items):
        raise BadInput(f"{what}: expected names separated by commas")
    return items


def _check_scopes(scopes):
    unknown = [s for s in scopes if s not in Client.SCOPES]
    if unknown:
        raise BadInput(f"--scopes: {unknown[0]!r} is not one of {', '.join(Client.SCOPES)}")
    return sorted(set(scopes))


def default_upload_source(name):
    """The upload source a client gets when none is named: `uploads-<client name>`."""
    return f"uploads-{name}"


def _check_access(client, no_sources):
    """The rules every client follows (raising BadInput): a client with the upload scope
    names its upload source, and that source is an upload connector from now on (added when
    missing); one with the read scope reads some source, unless `no_sources` says it is
    meant to read none yet."""
    if client.upload_source and not SOURCE_NAME_RE.match(client.upload_source):
        raise BadInput(f"--upload-source: {client.upload_source!r} is not a source name")
    if "read" in client.scopes and not client.sources and not no_sources:
        raise BadInput("--sources: a client with the read scope and no sources reads nothing; give it sources "
                       "(e.g. 'agent-*', or '*' for all) or say it should read none yet (--no-sources)")
    if "upload" in client.scopes:
        if not client.upload_source:
            client.upload_source = default_upload_source(client.name)
        configured.ensure_upload(client.upload_source)


def create(name, *, sources=(), scopes=("read",), upload_source="", no_sources=False):
    """Create a client; returns (client, token). The token is shown once and never stored.

    With the upload scope, `upload_source` defaults to `uploads-<name>`, and an `upload`
    connector of that name is added in the same transaction when none exists. Raises BadInput
    — nothing created — for a bad name, scope or source, a name taken, an upload source that
    is a connector of another type, or the read scope with no sources unless `no_sources`."""
    if not name or not SOURCE_NAME_RE.match(name):
        raise BadInput(f"name: {name!r} must be letters, digits, '.', '_', '-'")
    token_id = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    client = Client(name=name, token_id=token_id, token_hash=_digest(token), sources=parse_globs(sources),
                    scopes=_check_scopes(_parse_list(scopes, "--scopes")), upload_source=upload_source or "")
    if Client.objects.filter(name=name).exists():
        raise BadInput(f"a client named {name!r} exists already")
    try:
        with transaction.atomic():  # a savepoint: a duplicate name must not break the caller's transaction
            _check_access(client, no_sources)
            client.save()
    except IntegrityError:
        raise BadInput(f"a client named {name!r} exists already") from None
    return client, token


def update(name, *, sources=None, scopes=None, upload_source=None, no_sources=False):
    """Change a client's allowed sources, scopes or upload source (None keeps a field);
    returns the client. Raises NotFound, or BadInput under the rules of `create`, in which
    case nothing is saved. The token stays the same."""
    client = get(name)
    if sources is not None:
        client.sources = parse_globs(sources)
    if scopes is not None:
        client.scopes = _check_scopes(_parse_list(scopes, "--scopes"))
    if upload_source is not None:
        client.upload_source = upload_source
    with transaction.atomic():
        _check_access(client, no_sources)
        client.save()
    return client


def listing():
    """Every client, by name (revoked ones too)."""
    return list(Client.objects.order_by("name"))


def get(name):
    client = Client.objects.filter(name=name).first()
    if client is None:
        raise NotFound(f"no client named {name!r}")
    return client


def revoke(name):
    """Revoke a client's token at once. Idempotent."""
    client = get(name)
    if client.revoked_at is None:
        client.revoked_at = timezone.now()
        client.save(update_fields=["revoked_at"])
    return client


def authenticate(token, now=None):
    """The Caller for a bearer token, or None (unknown, malformed, revoked)."""
    if not token or not token.startswith(TOKEN_PREFIX) or token.count("_") < 2:
        return None
    token_id = token[len(TOKEN_PREFIX):].split("_", 1)[0]
    client = Client.objects.filter(token_id=token_id).first()
    if client is None or client.revoked_at is not None:
        return None
    if not hmac.compare_digest(client.token_hash, _digest(token)):
        return None
    now = now or timezone.now()
    if client.last_used_at is None or client.last_used_at < now - _LAST_USED_EVERY:
        Client.objects.filter(pk=client.pk).update(last_used_at=now)
    return Caller(name=client.name, sources=tuple(client.sources), scopes=frozenset(client.scopes),
                  upload_source=client.upload_source)


def bearer(header):
    """The token in an `Authorization` header value, or None: the one place every route (the
    API's auth class, the MCP router, the docs) reads it.

    Accepted: the scheme `Bearer` in any case, then the token, separated (and surrounded) by
    any run of spaces or tabs — `Bearer  <token> ` is the token. Refused (None): no header,
    another scheme (`Basic …`, `Token …`), a bare token, `Bearer` with no token, and a
    value with more than one word after the scheme (a token holds no white space).
    """
    found = _BEARER_RE.fullmatch(header or "")
    return found.group(1) if found else None


# --- callers kept between requests (the MCP router) --------------------------------------------

KEPT_SECONDS = 30   # also how stale `last_used_at` may get beyond its minute
_KEPT_MOST = 1024


def _changed_path():
    return settings.DATA_DIR / "clients.changed"


def _changes():
    """The identity of the last change to the clients (the marker file's inode and mtime; a
    new file each time), or None before the first."""
    try:
        found = os.stat(_changed_path())
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns


class _Kept:
    def __init__(self):
        self.lock = threading.Lock()
        self.callers = {}    # token: (until, caller)
        self.changes = None

    def get(self, token, changes):
        with self.lock:
            if changes != self.changes:
                self.callers.clear()
                self.changes = changes
                return None
            kept = self.callers.get(token)
        return kept[1] if kept and kept[0] > time.monotonic() else None

    def put(self, token, caller, changes):
        with self.lock:
            if changes != self.changes:   # a change landed while the token was checked
                return
            if len(self.callers) >= _KEPT_MOST:
                self.callers.clear()
            self.callers[token] = (time.monotonic() + KEPT_SECONDS, caller)


_kept = _Kept()


def recall(token):
    """The Caller this process authenticated for `token` less than KEPT_SECONDS ago, unless
    any client changed since; else None. No database query: safe on the event loop."""
    return _kept.get(token, _changes()) if token else None


def check(token):
    """The Caller for a bearer token, or None: the kept one (`recall`), else `authenticate`
    (and kept). What the API, its docs and (in two halves, the first on its event loop) the
    MCP router ask."""
    return recall(token) or authenticate_kept(token)


def authenticate_kept(token):
    """`authenticate`, and the caller kept for `recall`."""
    changes = _changes()   # before the query: a change committed after it clears what is kept
    caller = authenticate(token)
    if caller is not None:
        _kept.put(token, caller, changes)
    return caller


def _mark_changed():
    path = _changed_path()
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fresh.write_text(secrets.token_hex(8), encoding="ascii")
    os.replace(fresh, path)   # a new file: a new inode, whatever the clock's resolution


@receiver(post_save, sender=Client)
@receiver(post_delete, sender=Client)
def _client_changed(sender, **kwargs):
    """Marked at once, and again once committed: a process that looked the client up in
    between, before the commit, kept what it read and forgets it then."""
    _mark_changed()
    transaction.on_commit(_mark_changed)
