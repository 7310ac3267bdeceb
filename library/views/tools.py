"""Admin tools (docs/design.md "The web app", staff): retag all, redact-stored (a preview job counts what would
change; its page offers the apply button), re-summarise by ids or by a filter. Each starts a
background job; the job page shows its progress (htmx polls a fragment every second; without
JavaScript the page refreshes itself) and, when it ends, the service's report."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from library import jobs
from library.errors import BadInput, LibraryError, NotFound
from library.ingest import maintenance
from library.ingest.summarize import configuration
from library.models import Job
from library.views.staff import missing, staff_required

FILTER_FIELDS = maintenance.SELECT_FIELDS


def _page(request, *, form=None, status=200):
    summarizer = configuration.effective()
    return render(request, "library/admin_tools.html", {
        "jobs": jobs.recent(), "fields": FILTER_FIELDS, "form": form or {"field": "summarizer"},
        "summarizer": summarizer.get("provider") or "extractive", "model": summarizer.get("model") or "",
    }, status=status)


@staff_required
@require_GET
def admin_tools(request):
    return _page(request)


def _start(request, kind, params=None, *, form=None):
    try:
        job = jobs.start(kind, params, request.user)
    except LibraryError as exc:
        messages.error(request, str(exc))
        return _page(request, form=form, status=400) if form is not None else redirect("admin-tools")
    return redirect("job", job.pk)


@staff_required
@require_POST
def retag_all(request):
    return _start(request, Job.Kind.RETAG)


@staff_required
@require_POST
def redact_preview(request):
    """Count the items the current redaction rules would change; nothing is written."""
    return _start(request, Job.Kind.REDACT_PREVIEW)


@staff_required
@require_POST
def redact_apply(request):
    return _start(request, Job.Kind.REDACT_STORED)


def _selection(form):
    """{"ids": [...]} from the ids box, else {"where": "field=value"}; raises BadInput."""
    if form["ids"]:
        try:
            return {"ids": [int(part) for part in form["ids"].replace(",", " ").split()]}
        except ValueError:
            raise BadInput("ids must be whole numbers separated by commas") from None
    if form["value"]:
        if form["field"] not in FILTER_FIELDS:
            raise BadInput(f"choose one of {', '.join(FILTER_FIELDS)}")
        return {"where": f"{form['field']}={form['value']}"}
    raise BadInput("give item ids, or a filter value")


@staff_required
@require_POST
def resummarize(request):
    form = {name: (request.POST.get(name) or "").strip() for name in ("ids", "field", "value")}
    try:
        params = _selection(form)
    except BadInput as exc:
        messages.error(request, str(exc))
        return _page(request, form=form, status=400)
    return _start(request, Job.Kind.RESUMMARIZE, params, form=form)


@staff_required
@require_GET
def job(request, job_id):
    """A job's progress and, once finished, its report. htmx asks for the fragment alone."""
    try:
        found = jobs.get(job_id)
    except NotFound:
        return missing(request, f"job {job_id}")
    template = "library/_job.html" if request.headers.get("HX-Request") else "library/job.html"
    return render(request, template, {"job": found})
