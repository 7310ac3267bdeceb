"""Staff actions on one item (docs/design.md "The web app"): re-summarise (a background job), retag (now), delete
(forget its unit for good, after a confirmation page: library.views.forgetting). Thin: each calls one service and redirects with a message."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from library import jobs
from library import search as lib
from library.access.people import allowed_sources
from library.errors import LibraryError, NotFound
from library.ingest import maintenance
from library.models import Job
from library.views import forgetting
from library.views.staff import staff_required


def _not_found(request, item_id):
    return render(request, "library/not_found.html", {"item_id": item_id}, status=404)


@staff_required
@require_POST
def resummarize(request, item_id):
    """Start a job that summarises the item again with the configured summariser."""
    try:
        lib.get_item(item_id, allowed_sources=allowed_sources(request.user))
        job = jobs.start(Job.Kind.RESUMMARIZE, {"ids": [item_id]}, request.user)
    except NotFound:
        return _not_found(request, item_id)
    except LibraryError as exc:
        messages.error(request, f"Cannot re-summarise: {exc}")
        return redirect("item", item_id)
    messages.info(request, f"Re-summarising item #{item_id} in the background.")
    return redirect("job", job.pk)


@staff_required
@require_POST
def retag(request, item_id):
    """Apply the project rules to the item now; the message says old → new."""
    try:
        old, new = maintenance.retag_item(item_id)
    except NotFound:
        return _not_found(request, item_id)
    if old == new:
        messages.info(request, f"Retagged: no change (project {old or '(none)'}).")
    else:
        messages.success(request, f"Retagged: project {old or '(none)'} → {new or '(none)'}.")
    return redirect("item", item_id)


@staff_required
@require_http_methods(["GET", "POST"])
def delete(request, item_id):
    """GET: a confirmation page. POST: forget the item's unit for good (library.forget) and go home."""
    return forgetting.forget_item(request, item_id)
