"""Users (docs/design.md "Access", "The web app", staff): the list with an add form; each user's page edits their
allowed sources, staff flag and password; deactivate after a confirmation page, reactivate
with one button. The rules (a name and a password Django accepts, globs as clients take
them, a person who is not staff reads some source, nobody locks themselves out) are
`people.create`/`update`'s, as for `jezero user`."""

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from library.access import people
from library.access.first_admin import password_rules
from library.errors import BadInput, NotFound
from library.filters import library_sources, source_names
from library.ingest import sources
from library.views.staff import missing, staff_required


def _form(data):
    return {
        "name": (data.get("name") or "").strip(),
        "sources": (data.get("sources") or "").strip(),
        "staff": data.get("staff") == "on",
        "password": data.get("password") or "",
    }


def _page(request, template, context, status=200):
    """Render with what the form's help lists: every source name in the library or of a
    connector (globs match these), and the password rules."""
    names = sorted(set(library_sources()) | set(sources.names()))
    return render(request, template, {**context, "source_names": names, "password_rules": password_rules()},
                  status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def users_page(request):
    """GET: the list and the add form. POST: add a user with the password typed."""
    if request.method == "GET":
        form = {"name": "", "sources": "", "staff": False}
        return _page(request, "library/users.html", {"users": people.listing(), "form": form})
    form = _form(request.POST)
    try:
        row, _ = people.create(form["name"], sources=form["sources"], staff=form["staff"], password=form["password"])
    except BadInput as exc:
        messages.error(request, str(exc))
        form.pop("password")   # never sent back into the page
        return _page(request, "library/users.html", {"users": people.listing(), "form": form}, status=400)
    messages.success(request, f"Added {row.name}: {_reads(row)}.")
    return redirect("user", row.name)


def _reads(row):
    if row.staff:
        return "staff, reads every source"
    return f"reads {', '.join(row.sources)}" if row.sources else "reads nothing"


@staff_required
@require_http_methods(["GET", "POST"])
def user(request, name):
    """GET: the edit form. POST: save allowed sources, the staff flag and (when typed) a new
    password."""
    try:
        found = people.get(name)
    except NotFound:
        return missing(request, f"user {name}")
    if request.method == "GET":
        form = {"sources": ", ".join(found.sources), "staff": found.staff}
        return _page(request, "library/user.html", {"person": found, "form": form, **_now(found)})
    form = _form(request.POST)
    try:
        row = people.update(name, sources=form["sources"], staff=form["staff"], password=form["password"] or None,
                            by=request.user)
    except BadInput as exc:
        messages.error(request, str(exc))
        form.pop("password")
        return _page(request, "library/user.html", {"person": found, "form": form, **_now(found)}, status=400)
    if form["password"] and name == request.user.get_username():
        request.user.refresh_from_db()
        update_session_auth_hash(request, request.user)   # a new own password keeps this session
    messages.success(request, f"Saved {name}: {_reads(row)}.")
    return redirect("user", name)


def _now(row):
    """The sources of the library the person reads today (None: every one)."""
    return {"reads_now": None if row.reads_everything else source_names(row.sources)}


@staff_required
@require_http_methods(["GET", "POST"])
def deactivate(request, name):
    """GET: a confirmation page. POST: the user can no longer log in, from their next request."""
    try:
        found = people.get(name)
    except NotFound:
        return missing(request, f"user {name}")
    if request.method == "GET":
        return render(request, "library/user_deactivate.html", {"person": found})
    try:
        people.update(name, active=False, by=request.user)
    except BadInput as exc:
        messages.error(request, str(exc))
        return redirect("user", name)
    messages.success(request, f"Deactivated {name}: they can no longer log in.")
    return redirect("users")


@staff_required
@require_POST
def reactivate(request, name):
    try:
        people.update(name, active=True)
    except NotFound:
        return missing(request, f"user {name}")
    messages.success(request, f"Reactivated {name}: they can log in again.")
    return redirect("user", name)
