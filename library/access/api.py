"""The JSON API under /api/v1/ (docs/design.md "HTTP API"): thin routes over `library.search`, `hooks` and
`inbox`. Callers authenticate with a client's bearer token or a logged-in browser session;
every read applies the caller's allowed sources.

The OpenAPI document is exact: every parameter is described with its bounds, the upload body
is declared, and every error has one shape, `{"detail": "<what went wrong>"}` (`ErrorOut`),
declared on each route that can answer it: 400 bad query, 401 no or invalid token, 403
missing scope, 404, 413, 422 a parameter or body outside its declared shape (the detail names
it), 429 too many requests. An unknown path or method under /api/ is a JSON 404 or 405 too.
The document and the docs page (Swagger UI from django-ninja's own static files, no inline
script, so it works offline under the site's CSP) answer the same callers as the routes: a
logged-in person or a client token (docs/security.md)."""

from functools import wraps
from typing import Annotated

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest
from django.urls import re_path
from ninja import Field, NinjaAPI, P, Path, Query, Router, Schema, Status, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.views import openapi_json, openapi_view
from ninja.security import HttpBearer, SessionAuth
from pydantic import BaseModel

from library import search
from library.access import clients, hooks, ratelimit
from library.access.schemas import (
    ISO_DATE_PATTERN,
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
from library.terms import MAX_QUERY_CHARS, MAX_TERMS


class ClientToken(HttpBearer):
    """A client's bearer token, read by `clients.bearer` like on every other route."""

    def __call__(self, request):
        token = clients.bearer(request.headers.get(self.header))
        return self.authenticate(request, token) if token else None

    def authenticate(self, request, token):
        return clients.check(token)


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


# --- unknown paths and methods, and who may read the document -------------------------------

def _detail(status, detail, **headers):
    response = api.create_response(None, {"detail": detail}, status=status)
    for name, value in headers.items():
        response[name] = value
    return response


def not_found(request, *args, **kwargs):
    """A JSON 404 for any path under /api/ that no route answers."""
    return _detail(404, f"no API route at {request.path}")


def _json_refusals(view):
    """`view` (a sync view: every route here is one), with the 404 it raises and the 405 its
    router returns (HTML or plain text in Django and django-ninja) answered as JSON errors like
    every other."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            response = view(request, *args, **kwargs)
        except Http404:
            return not_found(request)
        if response.status_code == 405 and response.get("Allow") is not None:
            allowed = response["Allow"]
            return _detail(405, f"{request.method} is not allowed here; use {allowed}", Allow=allowed)
        return response

    return wrapped


def _readers_only(view):
    """The docs page answers who may call the API: a logged-in person or a valid client token;
    anyone else gets the login page (or 401 for a wrong token). The OpenAPI document itself
    answers anyone (docs/design.md "Access": it holds no data), so that a tool generates a client from the
    live URL before it has a token."""
    if getattr(view, "func", None) is openapi_json:
        return view

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        header = request.headers.get("Authorization")
        if header is None:          # a browser: its session, as BrowserSession reads it for the routes
            if request.user.is_authenticated:
                return view(request, *args, **kwargs)
            if getattr(view, "func", None) is openapi_view:
                return redirect_to_login(request.get_full_path())
        else:
            token = clients.bearer(header)
            if token and clients.check(token):
                return view(request, *args, **kwargs)
        return _detail(401, "missing or invalid token", **{"WWW-Authenticate": "Bearer"})

    return wrapped


class JezeroAPI(NinjaAPI):
    """NinjaAPI whose URLs answer JSON for an unknown path (404) or method (405) as well."""

    def _get_urls(self):
        urls = super()._get_urls()
        for pattern in urls:
            pattern.callback = _json_refusals(pattern.callback)
        return [*urls, re_path(r"^.*$", not_found, name="not-found")]

    def get_openapi_operation_id(self, operation):
        """The view's own name (`search_items`, `upload_session`): what a generated client calls."""
        return operation.view_func.__name__


api = JezeroAPI(
    title="Jezero", version="1", urls_namespace="api",
    description=(
        "Search and feed a Jezero library. Authenticate with a client token (`Authorization: Bearer <token>`) or, "
        "from a browser, a logged-in session. Every error is `{\"detail\": \"<what went wrong>\"}` with its "
        "status: 400 bad query, 401 no or invalid token, 403 missing scope, 404 no such item (or route), 405 "
        "method not allowed, 413 upload too large, 422 a parameter or body outside its declared shape (the "
        "detail names it), 429 too many requests (`Retry-After` says how many seconds to wait)."),
    auth=[ClientToken(), BrowserSession()],
    # Swagger UI from django-ninja's static files (no CDN, no inline script); no validator badge,
    # which would call a server outside.
    docs=Swagger(settings={"validatorUrl": None}),
    docs_decorator=_readers_only,
)
reads = Router(tags=["read"])
devices = Router(tags=["devices"])

_ERRORS = {
    400: "A query the library cannot run (a date that is not a real date, too many terms, a body that is not JSON).",
    401: "No token, or an unknown, malformed or revoked one.",
    403: "The token lacks the scope this route needs.",
    404: "No such item, or one outside the client's allowed sources (answered the same way).",
    413: "The body is larger than the route takes: for an upload, the server's limit (JEZERO_MAX_UPLOAD_MB, "
         "50 MB by default, declared or after decompression); refused before the body is read when "
         "Content-Length says so.",
    415: "A Content-Encoding other than gzip or identity.",
    422: "A parameter or the body is outside its declared type or bounds, or the upload is not a valid "
         "transcript; `detail` names the parameter or says why.",
    429: "Too many requests from this client.",
}
_ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds to wait before the next request.",
                          "schema": {"type": "integer", "minimum": 1}}},
}


def answers(ok, *errors, **openapi_extra):
    """A route's `response=` and `openapi_extra=`: `ok` ({status: schema}) and each error
    status with `ErrorOut`, its description and headers (401, 403, 422 and 429 on every route:
    each checks the token and its scope, validates its parameters and counts its calls)."""
    errors = sorted({401, 403, 422, 429, *errors})
    described = {status: {"description": _ERRORS[status], **({"headers": _ERROR_HEADERS[status]}
                                                              if status in _ERROR_HEADERS else {})}
                 for status in errors}
    extra = dict(openapi_extra)
    extra["responses"] = {**described, **extra.get("responses", {})}
    return {"response": {**ok, **{status: ErrorOut for status in errors}}, "openapi_extra": extra}


@api.exception_handler(BadInput)
def bad_input(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=400)


@api.exception_handler(NotFound)
def item_not_found(request, exc):
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


@api.exception_handler(ValidationError)
def invalid(request, exc):
    """422 with one sentence naming each bad parameter or body field, in the `ErrorOut` shape
    of every other error: `limit: Input should be less than or equal to 50`."""
    return api.create_response(request, {"detail": "; ".join(_problem(error) for error in exc.errors)}, status=422)


def _problem(error):
    source, *where = error.get("loc") or ("request",)
    if source == "body":
        where = where[1:]        # the body's fields, not the name of the view's argument
    name = ".".join(str(part) for part in where) or str(source)
    return f"{name}: {error.get('msg', 'invalid')}"


# --- the read routes: parameters described and bounded (limits as `search.max_limit` says) --

MAX_LIMIT = settings.JEZERO["search"]["max_limit"]


def _limit(default, what):
    default = search.clamp_limit(None, default)   # what a missing limit means
    return Query[int | None, P(ge=1, le=MAX_LIMIT, description=f"How many {what}: 1 to {MAX_LIMIT} "
                                                              f"(`search.max_limit`); {default} when left out.")]


def _words(description, required):
    # The length cap is declared here and checked by the search (a 400 that says what to do), like
    # the cap on terms, which no schema can express.
    text = Annotated[str, Field(json_schema_extra={"maxLength": MAX_QUERY_CHARS})]
    return Query[text if required else text | None, P(min_length=1, description=(
        f"{description} At most {MAX_QUERY_CHARS:,} characters and {MAX_TERMS} words or \"phrases\" (more is a "
        "400); control characters count as spaces."))]


Words = _words("Two to five distinctive words (names, identifiers, error strings, file names, commands); fragments "
               "match whole words (`migrat` finds `migration`), \"double quotes\" keep a phrase together, common "
               "words are ignored. Put project and source names in the filters, not here.", required=True)
Project = Query[str | None, P(min_length=1, max_length=200, description=(
    "Only items of this project: its exact slug, as items show it in `project` (e.g. `shop-site`)."))]
Source = Query[str | None, P(min_length=1, max_length=200, description=(
    "Only items of this source: its exact name, as items show it in `source` (e.g. `agent-claude-laptop`)."))]
# No `example=`: Swagger UI's Try-it-out fills a parameter in from its example, and a search
# tried there would then be limited to that month without the person having asked.
Since = Query[str | None, P(pattern=ISO_DATE_PATTERN, description=(
    "Only items at or after this ISO 8601 date or date-time (UTC unless it has an offset), e.g. `2026-11-01` "
    "or `2026-11-01T09:30:00Z`. A date that matches the pattern but does not exist, or is out of range (before "
    "1900, from 2200), is a 400."))]
Until = Query[str | None, P(pattern=ISO_DATE_PATTERN, description=(
    "Only items before this ISO 8601 date or date-time (exclusive; UTC unless it has an offset), e.g. "
    "`2026-12-01`. A date out of range (before 1900, from 2200) is a 400."))]
ItemId = Path[int, P(ge=1, description="An item's id, from a search, timeline or later result.")]


@reads.get("/search", summary="Search the library", **answers({200: SearchOut}, 400))
def search_items(request, q: Words, project: Project = None, source: Source = None, since: Since = None,
                 limit: _limit(search.search_default_limit(), "results") = None,
                 records_only: Query[bool, P(description=(
                     "Rank by the records alone (title, summary, questions, atoms), not also by what was said."
                 ))] = False):
    """Literal full-text search (words, fragments, "quoted phrases") over the records and what was said, best
    first with a recency boost; each result says where it matched (`matched_in`) and shows a `snippet`.
    `records_only` ranks by the records alone (docs/design.md "The record ranking")."""
    return search.search(q, allowed_sources=caller(request).sources, project=project, source=source, since=since,
                         limit=limit, records_only=records_only).as_dict()


@reads.get("/items/{item_id}", summary="Read one item", **answers({200: ItemOut}, 404), exclude_unset=True)
def get_item(request, item_id: ItemId, include_original: Query[bool, P(description=(
        "Also return `original`, the redacted text the record was written from (can be tens of kilobytes)."
))] = False):
    """Every field of an item; `original` (the redacted text it was written from) only on request."""
    return search.get_item(item_id, allowed_sources=caller(request).sources, include_original=include_original)


@reads.get("/items/{item_id}/later", summary="Newer items on the same subject", **answers({200: LaterOut}, 400, 404))
def later(request, item_id: ItemId,
          query: _words("The subject to look for; the item's title when left out.", required=False) = None,
          limit: _limit(search.LATER_DEFAULT_LIMIT, "items") = None):
    """Newer items on the same subject: call before relying on a decision, plan, status or number."""
    return later_dict(search.later(item_id, allowed_sources=caller(request).sources, query=query, limit=limit))


@reads.get("/timeline", summary="Items newest first", **answers({200: TimelineOut}, 400))
def timeline(request, project: Project = None, source: Source = None, since: Since = None, until: Until = None,
             limit: _limit(search.TIMELINE_DEFAULT_LIMIT, "items") = None):
    """Items newest first."""
    sources = caller(request).sources
    hits = search.timeline(allowed_sources=sources, project=project, source=source, since=since, until=until,
                           limit=limit)
    return {"results": [hit.as_dict() for hit in hits], "hint": None if hits else search.waiting(sources)}


# --- the device routes' declared input (their handlers are the upload and hooks code's) ------

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"   # as `inbox` checks it (422 otherwise)
UPLOAD_DOC = {
    "requestBody": {
        "required": True,
        "description": (
            "The session's transcript file as the agent wrote it: JSON Lines, one JSON object a line (Claude "
            "Code's or Codex's session `.jsonl`), sent as it is or gzip-compressed with `Content-Encoding: gzip`. "
            f"At most {settings.JEZERO_MAX_UPLOAD_BYTES:,} bytes after decompression (`JEZERO_MAX_UPLOAD_MB`). "
            "The body is read as bytes whatever its Content-Type says: `application/octet-stream` (declared, "
            "what a generated client sends), `application/x-ndjson` or none."),
        # Declared as octet-stream alone: generic generators (openapi-python-client) send raw bytes
        # for that and skip a route that also lists a type they do not know, such as x-ndjson.
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    },
    "parameters": [{
        "in": "header", "name": "Content-Encoding", "required": False,
        "description": "`gzip` when the body is gzip-compressed; left out (or `identity`) when it is plain JSONL.",
        "schema": {"type": "string", "enum": ["gzip", "identity"]},
    }],
    "responses": {
        200: {"description": "The session was uploaded before; `stored` says whether this upload replaced it."},
        201: {"description": "The session's first upload, stored in the inbox."},
    },
}


class UploadParams(Schema):
    agent: str = Field(description=f"The agent that wrote the transcript: one of {', '.join(inbox.AGENTS)}.",
                       json_schema_extra={"enum": list(inbox.AGENTS)})
    session_id: str = Field(description="The agent's session id (its transcript's file name without `.jsonl`): "
                                        "letters, digits, '.', '_', '-', at most 200.",
                            json_schema_extra={"pattern": SESSION_ID_PATTERN})
    cwd: str | None = Field(None, description="The session's working folder: gives the project by the project rules "
                                              "when `project` is left out.")
    git_remote: str | None = Field(None, description="The working folder's git remote URL (a project hint).")
    git_branch: str | None = Field(None, description="The working folder's git branch.")
    project: str | None = Field(None, description="The project's slug, overriding the project rules.")
    ended: bool = Field(False, description="Whether the session has ended; once an upload says so, it stays ended.")


class UploadReceipt(UploadOut):
    """The upload's receipt: what the inbox holds for the session now, and whether this upload is it."""

    stored: bool = Field(description="false: the inbox already held this transcript or a longer copy of the "
                                     "session (a late upload overtaken by a newer one) and kept it")
    ended: bool = Field(description="whether the session is marked ended (once ended, it stays ended)")
    detail: str | None = Field(None, description="why the upload was not stored, in words")


def _chunks(request: HttpRequest, size=1 << 20):
    while chunk := request.read(size):
        yield chunk


@devices.post("/sessions", **answers({200: UploadReceipt, 201: UploadReceipt}, 413, 415, **UPLOAD_DOC))
def upload_session(request, params: Query[UploadParams]):
    """Upload a session transcript (the raw JSONL as the body, gzip with `Content-Encoding: gzip`).
    It is parsed and redacted at once; only the redacted dialogue is kept. Uploads never go
    backwards: a new upload replaces the one held only when its transcript is longer; a shorter
    or equally long one (a late upload) is answered 200 with `stored: false` and changes nothing,
    except that an ended upload marks the session ended, which it then stays. 201 when the
    session is new."""
    who = caller(request, "upload")
    declared = request.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > inbox.max_upload_bytes():
        raise UploadRejected(f"the upload is larger than {inbox.max_upload_bytes():,} bytes", 413)
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        raise UploadRejected(f"Content-Encoding {encoding!r} is not supported: send the body as it is, or gzip "
                             "with Content-Encoding: gzip", 415)
    gzipped = encoding in ("gzip", "x-gzip")
    receipt = inbox.receive(who, params.agent, params.session_id, _chunks(request), gzipped=gzipped, cwd=params.cwd,
                            git_remote=params.git_remote, git_branch=params.git_branch, project=params.project,
                            ended=params.ended)
    return Status(201 if receipt.created else 200, receipt.as_dict())


@devices.post("/hooks/session-start", **answers({200: InjectionOut}, 400))
def hook_session_start(request, payload: SessionStartIn):
    """What the session-start hook injects: the project's newest items and the protocol."""
    return hooks.session_start(allowed_sources=caller(request).sources, cwd=payload.cwd, project=payload.project,
                               git_remote=payload.git_remote).as_dict()


@devices.post("/hooks/first-prompt", **answers({200: InjectionOut}, 400))
def hook_first_prompt(request, payload: FirstPromptIn):
    """What the first-prompt hook injects: up to three plainly related items, or nothing."""
    return hooks.first_prompt(payload.prompt, allowed_sources=caller(request).sources, cwd=payload.cwd,
                              project=payload.project, git_remote=payload.git_remote).as_dict()


api.add_router("/", reads)
api.add_router("/", devices)


# --- parameters no route takes ---------------------------------------------------------------------

def refuse_unknown_parameters(view_func):
    """A route's function (decorated after the token check and the parameters' own checks),
    answering 422 that names a query parameter the route does not take, rather than ignoring
    it: a misspelt `sinse=` would otherwise return everything. What it takes are its keyword
    arguments, a Query[Schema] argument's fields flattened (as django-ninja reads them)."""

    @wraps(view_func)
    def checked(request, *args, **kwargs):
        known = set()
        for name, value in kwargs.items():
            known |= set(type(value).model_fields) if isinstance(value, BaseModel) else {name}
        unknown = sorted(set(request.GET) - known)
        if unknown:
            allowed = ", ".join(sorted(known)) or "none"
            return _detail(422, f"{', '.join(unknown)}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                                f"(this route takes: {allowed})")
        return view_func(request, *args, **kwargs)

    return checked


api.add_decorator(refuse_unknown_parameters, mode="operation")
