"""The Sources page (docs/design.md "The web app") — every connector with where it is defined, its schedule, cursor
state and newest run reports, the uploads no connector reads (a person who is not staff
sees only the connectors of the sources they may read) — and the staff actions: add a
connector (choose a type, then a form generated from the schema, with the folders found on
this machine offered as paths), edit, enable/disable, remove (after a confirmation page),
test (a dry run), run now (both background jobs) and reset the cursor. Connectors of
jezero.toml are read-only here. Every change goes through `library.ingest.configured`, as
the CLI's does."""

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from library import jobs
from library.access.people import allowed_sources
from library.errors import BadInput, InvalidConnector, LibraryError, NotFound, RunRefused
from library.filters import is_visible
from library.ingest import configured
from library.ingest import sources as ingest_sources  # the view `sources` is this module's
from library.models import Item, Job, UnitCursor
from library.schema import CONNECTOR_COMMON, TYPE_DOCS, Key, connector_keys, key_help
from library.views.staff import missing, staff_required

_NOT_IN_FORM = ("name", "type")
# The type's own options come first; these common ones follow under "More options".
_FIRST = ("enabled", "interval_minutes", "trust", "project")


@login_required
def sources(request):
    """Every connector for staff; anyone else sees only those whose name (the items' source)
    their allowed sources name, with their run reports, uploads and problems."""
    states, problems, waiting = ingest_sources.page()
    if not request.user.is_staff:
        globs = allowed_sources(request.user)
        states = [state for state in states if is_visible(state.name, globs)]
        problems = [(name, problem) for name, problem in problems if is_visible(name, globs)]
        waiting = [upload for upload in waiting if is_visible(upload.source, globs)]
    return render(request, "library/sources.html", {"sources": states, "problems": problems, "waiting": waiting})


def _start(request, name, kind, label):
    try:
        ingest_sources.get(name)
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
    """Test a connector: read and redact without calling the model, and list what a run would
    read — documents, characters, estimated tokens. Works on a disabled connector too."""
    return _start(request, name, Job.Kind.DRY_RUN, "dry run")


@staff_required
@require_http_methods(["GET", "POST"])
def reset(request, name):
    """GET: what a reset means, and a button. POST: forget the connector's cursor."""
    state = ingest_sources.state(name)
    if state is None:
        return missing(request, f"connector {name}")
    if request.method == "GET":
        return render(request, "library/source_reset.html", {"source": state})
    try:
        forgotten = ingest_sources.reset(name)
    except RunRefused as exc:
        messages.error(request, f"Cannot reset {name}: {exc}")
        return redirect("sources")
    messages.success(request, f"{name}: forgot {forgotten} unit cursor{'s' if forgotten != 1 else ''}; the next run "
                              "reads the source again (unchanged segments cost no model call).")
    return redirect("sources")


# --- adding and editing ------------------------------------------------------------------------

@dataclass
class Field:
    """One form field, generated from the schema's Key."""

    key: Key
    value: object      # text for inputs, a bool for a checkbox
    error: str = ""

    @property
    def name(self):
        return self.key.name

    @property
    def label(self):
        return self.key.name.replace("_", " ").capitalize()

    @property
    def help(self):
        return key_help(self.key)

    @property
    def widget(self):
        if self.key.kind == "bool":
            return "checkbox"
        if self.key.kind == "enum":
            return "select"
        if self.key.kind == "list[str]":
            return "textarea"
        return "number" if self.key.kind in ("int", "float") else "text"


def _text(value):
    if isinstance(value, list):
        return "\n".join(value)
    return "" if value is None else str(value)


def _fields(ctype, given, problems=None):
    """The form's fields for a connector of `ctype`: the type's own keys, then the common
    ones the person usually sets, then the rest ("More options")."""
    problems = problems or {}
    keys = [key for key in connector_keys(ctype) if key.name not in _NOT_IN_FORM]
    own = {key.name for key in connector_keys(ctype)} - {key.name for key in CONNECTOR_COMMON}
    order = sorted(keys, key=lambda key: (key.name not in own, key.name not in _FIRST))
    fields = []
    for key in order:
        if key.kind == "bool":
            value = given.get(key.name, key.default)
            value = value if isinstance(value, bool) else str(value).lower() in ("true", "on", "1", "yes")
        else:
            value = _text(given.get(key.name))
        fields.append(Field(key, value, problems.get(key.name, "")))
    main = [f for f in fields if f.name in own or f.name in _FIRST]
    more = [f for f in fields if f not in main]
    return main, more


def _posted(request, ctype):
    """The form's values as the schema's keys: text, a checkbox as true/false."""
    values = {}
    for key in connector_keys(ctype):
        if key.name in _NOT_IN_FORM:
            continue
        if key.kind == "bool":
            values[key.name] = "true" if request.POST.get(key.name) == "on" else "false"
        else:
            values[key.name] = request.POST.get(key.name, "")
    return values


def _form(request, *, ctype, name, given, problems=None, editing=False, status=200):
    main, more = _fields(ctype, given, problems)
    suggestions = [s for s in configured.suggested_paths() if s.type in (ctype, "")]
    return render(request, "library/source_form.html", {
        "ctype": ctype, "type_doc": TYPE_DOCS[ctype], "name": name, "main": main, "more": more,
        "more_open": any(field.error for field in more), "editing": editing,
        "name_error": (problems or {}).get("name", ""), "type_error": (problems or {}).get("type", ""),
        "suggestions": suggestions,
    }, status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def add(request):
    """GET without a type: the types and the folders found. GET ?type=…: the type's form
    (a suggested path and name may come along). POST: add it, or show what is wrong."""
    data = request.POST if request.method == "POST" else request.GET
    ctype = (data.get("type") or "").strip()
    if ctype not in TYPE_DOCS:
        return render(request, "library/source_types.html", {
            "types": TYPE_DOCS.items(), "suggestions": configured.suggested_paths(),
            "path": (request.GET.get("path") or "").strip(),
        }, status=400 if request.method == "POST" else 200)
    if request.method == "GET":
        path = (request.GET.get("path") or "").strip()
        name = (request.GET.get("name") or "").strip() or configured.suggested_name(ctype, path)
        return _form(request, ctype=ctype, name=name, given={"path": path} if path else {})
    name = (request.POST.get("name") or "").strip()
    values = _posted(request, ctype)
    try:
        config = configured.add(ctype, name, values)
    except InvalidConnector as exc:
        messages.error(request, f"Not added: {exc}")
        return _form(request, ctype=ctype, name=name, given=values, problems=exc.problems, status=400)
    when = (f"The worker runs it within 5 minutes, then every {config['interval_minutes']} min."
            if config["enabled"] else "It is disabled: enable it to have it run on schedule.")
    messages.success(request, f"Added {name}. Test it (a dry run lists what a run would read) or run it now. {when}")
    return redirect("sources")


def _database_entry(request, name):
    """(the database's connector `name`, None), or (None, the answer: 404 for no such
    connector; back to Sources, saying why, for one of jezero.toml)."""
    entry = next((e for e in configured.defined() if e.name == name and e.origin == configured.DATABASE), None)
    if entry is not None:
        return entry, None
    if configured.entry(name) is not None:
        messages.error(request, f"{name} is defined in jezero.toml and is read-only here: change it in the file.")
        return None, redirect("sources")
    return None, missing(request, f"connector {name}")


@staff_required
@require_http_methods(["GET", "POST"])
def edit(request, name):
    """GET: the form with the connector's options. POST: save them all (an empty field puts
    the key back to its default)."""
    database, response = _database_entry(request, name)
    if response is not None:
        return response
    if request.method == "GET":
        return _form(request, ctype=database.type, name=name, given=database.given, editing=True)
    values = _posted(request, database.type)
    try:
        configured.edit(name, values, replace=True)
    except InvalidConnector as exc:
        messages.error(request, f"Not saved: {exc}")
        return _form(request, ctype=database.type, name=name, given=values, problems=exc.problems, editing=True,
                     status=400)
    messages.success(request, f"Saved {name}. The worker uses the change at its next check.")
    return redirect("sources")


@staff_required
@require_POST
def enabled(request, name):
    """Enable (`enabled=true`) or disable a connector of the database."""
    want = request.POST.get("enabled") == "true"
    try:
        configured.set_enabled(name, want)
    except NotFound:
        return missing(request, f"connector {name}")
    except BadInput as exc:
        messages.error(request, str(exc))
        return redirect("sources")
    state = "enabled: it runs on schedule" if want else "disabled: it is kept, but never run on schedule"
    messages.success(request, f"{name} is {state}.")
    return redirect("sources")


@staff_required
@require_http_methods(["GET", "POST"])
def delete(request, name):
    """GET: what removing keeps and forgets, and a button. POST: remove it."""
    entry, response = _database_entry(request, name)
    if response is not None:
        return response
    if request.method == "GET":
        return render(request, "library/source_delete.html", {
            "name": name, "type": entry.type, "items": Item.objects.filter(source=name).count(),
            "cursors": UnitCursor.objects.filter(connector=name).count(),
        })
    try:
        removed = configured.remove(name)
    except LibraryError as exc:
        messages.error(request, f"Cannot remove {name}: {exc}")
        return redirect("sources")
    messages.success(request, f"Removed {name}. Its {removed.items_kept} item{'s' if removed.items_kept != 1 else ''} "
                              f"stay in the library; {removed.cursors_forgotten} unit cursor"
                              f"{'s were' if removed.cursors_forgotten != 1 else ' was'} forgotten.")
    return redirect("sources")
