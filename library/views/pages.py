"""The pages every person may use: search (the home page), an item, the timeline, projects.
Thin: they parse the request, call `library.search` with the person's allowed sources
(`people.allowed_sources`: staff read everything, anyone else what their globs name), and
render. An item outside them is "not found", exactly as a missing id."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from library import search as lib
from library.access.people import allowed_sources
from library.errors import BadInput, NotFound
from library.filters import source_names
from library.vocabulary import ATOM_DISPLAY_ORDER

PAGE_SIZE = 20


MAX_PAGE = 10_000   # 200,000 items deep: past any library's end, and no integer overflow in SQLite


def _page(request):
    """The page asked for, 1 to MAX_PAGE (anything else: the nearest of those, or 1)."""
    try:
        return min(max(int(request.GET.get("page", 1)), 1), MAX_PAGE)
    except ValueError:
        return 1


def _filters(request):
    return {name: (request.GET.get(name) or "").strip() or None for name in ("project", "source", "since")}


@login_required
def search(request):
    """Search with project / source / since filters; an empty query lists the newest items."""
    query = (request.GET.get("q") or "").strip()
    filters, page = _filters(request), _page(request)
    offset = (page - 1) * PAGE_SIZE
    records_only = request.GET.get("records_only") == "1"
    globs = allowed_sources(request.user)
    hits, match, original_match, error, hint, waiting = [], None, None, None, None, None
    try:
        if query:
            result = lib.search(query, allowed_sources=globs, limit=PAGE_SIZE, offset=offset,
                                records_only=records_only, **filters)
            hits, match, original_match = result.hits, result.match, result.original_match
            hint = result.hint if result.newest else None
            waiting = result.waiting
        else:
            hits = lib.timeline(allowed_sources=globs, limit=PAGE_SIZE, offset=offset, **filters)
            waiting = None if hits or offset else lib.waiting(globs)
    except BadInput as exc:
        error = str(exc)
    pool = lib.candidate_pool()   # a search ranks this many results at most
    more = len(hits) == PAGE_SIZE and (not query or offset + PAGE_SIZE < pool)
    return render(request, "library/search.html", {
        "query": query, "filters": filters, "hits": hits, "match": match, "original_match": original_match,
        "records_only": records_only, "error": error, "newest_hint": hint, "waiting": waiting,
        "page": page, "more": more, "sources": source_names(globs),
        "project_names": [p["project"] for p in lib.projects(allowed_sources=globs)],
        "short_query": bool(query) and match is None and original_match is None and not error,
    })


@login_required
def item(request, item_id):
    globs = allowed_sources(request.user)
    try:
        data = lib.get_item(item_id, allowed_sources=globs, include_original="original" in request.GET)
        newer = lib.later(item_id, allowed_sources=globs)
    except NotFound:
        return render(request, "library/not_found.html", {"item_id": item_id}, status=404)
    kinds = ATOM_DISPLAY_ORDER
    atoms = [(kind, [a["text"] for a in data["atoms"] if a["kind"] == kind]) for kind in kinds]
    return render(request, "library/item.html", {
        "item": data, "atoms": [(kind, texts) for kind, texts in atoms if texts], "later": newer,
        "show_original": "original" in request.GET,
    })


@login_required
def timeline(request):
    filters, page = _filters(request), _page(request)
    until = (request.GET.get("until") or "").strip() or None
    globs = allowed_sources(request.user)
    try:
        hits = lib.timeline(allowed_sources=globs, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE, until=until,
                            **filters)
    except BadInput as exc:
        messages.error(request, str(exc))
        hits = []
    return render(request, "library/timeline.html", {
        "hits": hits, "filters": filters, "until": until, "page": page, "more": len(hits) == PAGE_SIZE,
        "sources": source_names(globs), "waiting": None if hits else lib.waiting(globs),
    })


@login_required
def projects(request):
    return render(request, "library/projects.html", {"projects": lib.projects(allowed_sources=allowed_sources(request.user))})
