"""The JSON API under /api/v1/ (SPEC §12): thin routes over `library.search`, `hooks` and
`inbox`. Callers authenticate with a client's bearer token or a logged-in browser session;
every read applies the caller's allowed sources. Errors are `{"detail": …}`: 400 bad query,
401 no or invalid token, 403 missing scope, 404, 413, 422, 429 too many requests."""

from django.http import HttpRequest
from ninja import NinjaAPI, Query, Router, Schema, Status
from ninja.errors import AuthenticationError, HttpError
from ninja.security import HttpBearer, SessionAuth

from library import search
from library.access import clients, hooks, ratelimit
from library.access.schemas import (
    ErrorOut,
    FirstPromptIn,
    InjectionOut,
    ItemOut,
    LaterOut,
    SearchOut,
    SessionStartIn,
    TimelineOut,
    UploadOut,
    later_dict,
)
from library.errors import BadInput, NotFound, RateLimited, UploadRejected
from library.ingest import inbox


class ClientToken(HttpBearer):
    def authenticate(self, request, token):
        return clients.authenticate(token)


class BrowserSession(SessionAuth):
    """A logged-in person's session (with Django's CSRF check on writes) — only when the
    request carries no token and does carry a session cookie. A wrong token is answered 401
    by the token's own check, never 403 by a CSRF check it has nothing to do with."""

    def _get_key(self, request):
        if request.headers.get("Authorization") or self.param_name not in request.COOKIES:
            return None
        return super()._get_key(request)


def caller(request, scope="read"):
    """The Caller of this request, or 403 when it lacks `scope`."""
    principal = request.auth
    who = clients.person(principal) if hasattr(principal, "get_username") else principal
    ratelimit.check(f"{'person' if who.person else 'client'}:{who.name}")
    if not who.can(scope):
        raise HttpError(403, f"this token lacks the {scope} scope")
    return who


api = NinjaAPI(title="Jezero", version="1", description="Search and feed a Jezero library.",
               auth=[ClientToken(), BrowserSession()], urls_namespace="api")
reads = Router(tags=["read"])
devices = Router(tags=["devices"])
COMMON = {401: ErrorOut, 403: ErrorOut}


@api.exception_handler(BadInput)
def bad_input(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=400)


@api.exception_handler(NotFound)
def not_found(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=404)


@api.exception_handler(UploadRejected)
def upload_rejected(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


@api.exception_handler(RateLimited)
def rate_limited(request, exc):
    response = api.create_response(request, {"detail": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(AuthenticationError)
def unauthorized(request, exc):
    response = api.create_response(request, {"detail": "missing or invalid token"}, status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@reads.get("/search", response={200: SearchOut, 400: ErrorOut, **COMMON})
def search_items(request, q: str, project: str | None = None, source: str | None = None, since: str | None = None,
                 limit: int | None = None, records_only: bool = False):
    """Literal full-text search (words, fragments, "quoted phrases") over the records and what was said, best
    first with a recency boost; each result says where it matched (`matched_in`) and shows a `snippet`.
    `records_only` ranks by the records alone (SPEC §7)."""
    return search.search(q, allowed_sources=caller(request).sources, project=project, source=source, since=since,
                         limit=limit, records_only=records_only).as_dict()


@reads.get("/items/{item_id}", response={200: ItemOut, 404: ErrorOut, **COMMON}, exclude_unset=True)
def get_item(request, item_id: int, include_original: bool = False):
    """Every field of an item; `original` (the redacted text it was written from) only on request."""
    return search.get_item(item_id, allowed_sources=caller(request).sources, include_original=include_original)


@reads.get("/items/{item_id}/later", response={200: LaterOut, 404: ErrorOut, **COMMON})
def later(request, item_id: int, query: str | None = None, limit: int | None = None):
    """Newer items on the same subject: call before relying on a decision, plan, status or number."""
    return later_dict(search.later(item_id, allowed_sources=caller(request).sources, query=query, limit=limit))


@reads.get("/timeline", response={200: TimelineOut, 400: ErrorOut, **COMMON})
def timeline(request, project: str | None = None, source: str | None = None, since: str | None = None,
             until: str | None = None, limit: int | None = None):
    """Items newest first."""
    hits = search.timeline(allowed_sources=caller(request).sources, project=project, source=source, since=since,
                           until=until, limit=limit)
    return {"results": [hit.as_dict() for hit in hits]}


class UploadParams(Schema):
    agent: str
    session_id: str
    cwd: str | None = None
    git_remote: str | None = None
    git_branch: str | None = None
    project: str | None = None
    ended: bool = False


def _chunks(request: HttpRequest, size=1 << 20):
    while chunk := request.read(size):
        yield chunk


@devices.post("/sessions", response={200: UploadOut, 201: UploadOut, 413: ErrorOut, 422: ErrorOut, **COMMON})
def upload_session(request, params: Query[UploadParams]):
    """Upload a session transcript (the raw JSONL as the body, gzip with `Content-Encoding: gzip`).
    It is parsed and redacted at once; only the redacted dialogue is kept. A new upload of the
    same session replaces the earlier one."""
    who = caller(request, "upload")
    declared = request.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > inbox.max_upload_bytes():
        raise UploadRejected(f"the upload is larger than {inbox.max_upload_bytes():,} bytes", 413)
    gzipped = request.headers.get("Content-Encoding", "").lower() == "gzip"
    row = inbox.receive(who, params.agent, params.session_id, _chunks(request), gzipped=gzipped, cwd=params.cwd,
                        git_remote=params.git_remote, git_branch=params.git_branch, project=params.project,
                        ended=params.ended)
    body = {"source": row.source, "session_id": row.session_id, "agent": row.agent, "version": row.version,
            "entries": len(row.entries), "size": row.size, "replaced": row.version > 1}
    return Status(200 if row.version > 1 else 201, body)


@devices.post("/hooks/session-start", response={200: InjectionOut, **COMMON})
def hook_session_start(request, payload: SessionStartIn):
    """What the session-start hook injects: the project's newest items and the protocol."""
    return hooks.session_start(allowed_sources=caller(request).sources, cwd=payload.cwd, project=payload.project,
                               git_remote=payload.git_remote).as_dict()


@devices.post("/hooks/first-prompt", response={200: InjectionOut, **COMMON})
def hook_first_prompt(request, payload: FirstPromptIn):
    """What the first-prompt hook injects: up to three plainly related items, or nothing."""
    return hooks.first_prompt(payload.prompt, allowed_sources=caller(request).sources, cwd=payload.cwd,
                              project=payload.project, git_remote=payload.git_remote).as_dict()


api.add_router("/", reads)
api.add_router("/", devices)
