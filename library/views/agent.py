"""The agent view (docs/design.md "Agent hooks", "The web app"): choose a project or type a working folder, and a first
message, and see exactly what the session-start and first-prompt hooks would inject. A GET
form, so a view can be bookmarked and shared. It reads as the person looking: their allowed
sources (`people.allowed_sources`), as a client with those globs would get."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from library import search as lib
from library.access import hooks
from library.access.people import allowed_sources


@login_required
@require_GET
def agent_view(request):
    form = {name: (request.GET.get(name) or "").strip() for name in ("project", "cwd", "prompt")}
    asked = any(name in request.GET for name in form)
    start = first = None
    globs = allowed_sources(request.user)
    if asked:
        start = hooks.session_start(allowed_sources=globs, cwd=form["cwd"] or None,
                                    project=form["project"] or None)
        first = hooks.first_prompt(form["prompt"], allowed_sources=globs, cwd=form["cwd"] or None,
                                   project=form["project"] or None)
    return render(request, "library/agent_view.html", {
        "form": form, "asked": asked, "start": start, "first": first,
        "start_items": start is not None and start.context != hooks.PROTOCOL,
        "words": hooks.distinctive_words(form["prompt"]) if asked else [],
        "project_names": [p["project"] for p in lib.projects(allowed_sources=globs)],
    })
