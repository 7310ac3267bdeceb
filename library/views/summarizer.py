"""The Settings page (docs/design.md "The web app", staff): the summariser — its provider, model and limits as a
form generated from the `[summarizer]` schema, each field saying where its value comes from
(default, jezero.toml, set here) with a button that clears a value set here; the API key as a
password field, never shown again (only "set — ends in …wxyz" and a Remove button); and a Test
button that sends one fixed sample through the effective configuration as a background job.
Every change goes through `library.ingest.summarize.configuration`, as `jezero summarizer`'s does."""

from dataclasses import dataclass

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from library import jobs
from library.errors import InvalidSettings, LibraryError
from library.ingest.summarize import configuration
from library.models import Job
from library.schema import key_help
from library.views.staff import staff_required


def shown(value):
    """A value as the page shows it: lists comma-separated, nothing as an em dash."""
    if value is None or value == [] or value == "":
        return "—"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value)


def _text(value):
    if isinstance(value, list):
        return "\n".join(value)
    return "" if value is None else str(value)


@dataclass
class Field:
    """One editable key: what is typed here (`text`, empty when nothing is set here), what is
    in use and where from (`current`), what is wrong with it (`error`)."""

    current: configuration.Value
    text: str
    error: str = ""

    @property
    def key(self):
        return configuration.KEYS[self.current.name]

    @property
    def name(self):
        return self.current.name

    @property
    def label(self):
        return self.name.replace("_", " ").capitalize()

    @property
    def help(self):
        return key_help(self.key)

    @property
    def widget(self):
        if self.key.kind == "enum":
            return "select"
        if self.key.kind == "list[str]":
            return "textarea"
        return "number" if self.key.kind in ("int", "float") else "text"

    @property
    def in_use(self):
        return shown(self.current.value)

    @property
    def below(self):
        """What an empty field gives: the file's value or the default, in words."""
        origin = self.current.origin if self.current.origin != configuration.DATABASE else self.current.below_origin
        value = self.current.value if self.current.origin != configuration.DATABASE else self.current.below
        return f"{configuration.ORIGIN_LABELS[origin]}: {shown(value)}"


def _page(request, *, posted=None, problems=None, status=200):
    described = configuration.describe()
    problems = problems or {}
    fields = []
    for name in configuration.EDITABLE:
        current = described.values[name]
        text = posted.get(name, "") if posted is not None else _text(current.stored)
        fields.append(Field(current, text, problems.get(name, "")))
    file_only = [(name, " ".join(value) if isinstance(value, list) else (value or ""), reason)
                 for name, reason in configuration.FILE_ONLY.items()
                 for value in [described.values[name].value]]
    return render(request, "library/settings.html", {
        "fields": fields, "file_only": file_only, "key": configuration.key_status(described.config),
        "key_error": problems.get("api_key", ""), "problems": described.problems if posted is None else {},
        "provider": described.config["provider"], "model": described.config.get("model") or "",
        "jobs": [job for job in jobs.recent() if job.kind == Job.Kind.SUMMARIZER_TEST][:3],
    }, status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def settings_page(request):
    """GET: the form. POST: save every field (an empty one is not set here: the file's value
    or the default applies) and the API key when one is typed — all of it, or nothing."""
    if request.method == "GET":
        return _page(request)
    posted = {name: request.POST.get(name, "") for name in configuration.EDITABLE}
    try:
        config = configuration.save(posted, api_key=request.POST.get("api_key", ""), replace=True)
    except InvalidSettings as exc:
        messages.error(request, "Not saved: " + "; ".join(f"{k.replace('_', ' ')}: {m}"
                                                          for k, m in exc.problems.items()))
        return _page(request, posted=posted, problems=exc.problems, status=400)
    model = f" ({config['model']})" if config.get("model") else ""
    messages.success(request, f"Saved. The summariser is {config['provider']}{model}; the worker uses it from its "
                              "next run. Test it to see a record it writes.")
    return redirect("settings")


@staff_required
@require_POST
def clear(request):
    """Clear one value set here back to jezero.toml's value or the default."""
    name = request.POST.get("clear", "")
    try:
        cleared = configuration.unset([name])
    except InvalidSettings as exc:
        messages.error(request, str(exc))
        return redirect("settings")
    if cleared:
        messages.success(request, f"Cleared {name}: {configuration.describe().values[name].origin_label} applies.")
    return redirect("settings")


@staff_required
@require_POST
def remove_key(request):
    if configuration.remove_key():
        messages.success(request, "Removed the saved API key.")
    return redirect("settings")


@staff_required
@require_POST
def run_test(request):
    """Send one fixed sample segment through the summariser in use (a background job)."""
    try:
        job = jobs.start(Job.Kind.SUMMARIZER_TEST, {}, request.user)
    except LibraryError as exc:
        messages.error(request, f"Cannot test the summariser: {exc}")
        return redirect("settings")
    return redirect("job", job.pk)
