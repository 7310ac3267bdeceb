"""The Sources page (SPEC §14) — every configured connector with its schedule, cursor state
and newest run reports — and the staff actions: run now and dry run (background jobs), reset
cursor (after a confirmation page)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from library import jobs
from library.errors import LibraryError, RunRefused
from library.ingest import sources as connectors
from library.models import Job
from library.views.staff import missing, staff_required


@login_required
def sources(request):
    return render(request, "library/sources.html", {"sources": connectors.overview()})


def _start(request, name, kind, label):
    try:
        connectors.get(name)
    except RunRefused:
        return missing(request, f"connector {name}")
    try:
        job = jobs.start(kind, {"connector": name}, request.user)
    except LibraryError as exc:
        messages.error(request, f"Cannot start the {label} of {name}: {exc}")
        return redirect("sources")
    messages.info(request, f"The {label} of {name} started in the background.")
    return redirect("job", job.pk)


@staff_required
@require_POST
def run(request, name):
    return _start(request, name, Job.Kind.RUN, "run")


@staff_required
@require_POST
def dry_run(request, name):
    """Collect and redact without calling the model: documents, characters, estimated tokens."""
    return _start(request, name, Job.Kind.DRY_RUN, "dry run")


@staff_required
@require_http_methods(["GET", "POST"])
def reset(request, name):
    """GET: what a reset means, and a button. POST: forget the connector's cursor."""
    state = connectors.state(name)
    if state is None:
        return missing(request, f"connector {name}")
    if request.method == "GET":
        return render(request, "library/source_reset.html", {"source": state})
    try:
        forgotten = connectors.reset(name)
    except RunRefused as exc:
        messages.error(request, f"Cannot reset {name}: {exc}")
        return redirect("sources")
    messages.success(request, f"{name}: forgot {forgotten} unit cursor{'s' if forgotten != 1 else ''}; the next run "
                              "reads the source again (unchanged segments cost no model call).")
    return redirect("sources")
