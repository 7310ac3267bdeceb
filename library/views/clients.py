"""Clients (docs/design.md "Access", "The web app", staff): the list with a create form; a created client's token is
rendered once, straight from the POST, with copy-ready snippets, and never stored or shown
again; each client's page edits its allowed sources, scopes and upload source; revoke after
a confirmation page. The rules (an upload source that is an upload connector, no reading
client without sources unless meant) are `clients.create`/`update`'s, as for the CLI."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from library.access import clients
from library.errors import BadInput, NotFound
from library.ingest import sources
from library.models import Client
from library.views.staff import missing, staff_required


def _form(data):
    return {
        "name": (data.get("name") or "").strip(),
        "sources": (data.get("sources") or "").strip(),
        "scopes": [scope for scope in data.getlist("scopes") if scope],
        "upload_source": (data.get("upload_source") or "").strip(),
        "no_sources": data.get("no_sources") == "on",
    }


def _choices():
    return {"scope_choices": Client.SCOPES, "upload_sources": sources.upload_names(),
            "source_names": sources.names()}


@staff_required
@require_http_methods(["GET", "POST"])
def clients_page(request):
    """GET: the list and the create form. POST: create, and show the token this once."""
    if request.method == "GET":
        form = {"name": "", "sources": "", "scopes": ["read"], "upload_source": "", "no_sources": False}
        return render(request, "library/clients.html", {"clients": clients.listing(), "form": form, **_choices()})
    form = _form(request.POST)
    try:
        client, token = clients.create(form["name"], sources=form["sources"], scopes=form["scopes"],
                                       upload_source=form["upload_source"], no_sources=form["no_sources"])
    except BadInput as exc:
        messages.error(request, str(exc))
        return render(request, "library/clients.html", {"clients": clients.listing(), "form": form, **_choices()},
                      status=400)
    base = request.build_absolute_uri("/").rstrip("/")
    response = render(request, "library/client_created.html", {"client": client, "token": token, "base": base})
    response["Cache-Control"] = "no-store"   # the token must not linger in a cache
    return response


@staff_required
@require_http_methods(["GET", "POST"])
def client(request, name):
    """GET: the edit form. POST: save allowed sources, scopes and upload source."""
    try:
        found = clients.get(name)
    except NotFound:
        return missing(request, f"client {name}")
    if request.method == "GET":
        form = {"sources": ", ".join(found.sources), "scopes": found.scopes, "upload_source": found.upload_source,
                "no_sources": not found.sources}
        return render(request, "library/client.html", {"client": found, "form": form, **_choices()})
    form = _form(request.POST)
    try:
        clients.update(name, sources=form["sources"], scopes=form["scopes"], upload_source=form["upload_source"],
                       no_sources=form["no_sources"])
    except BadInput as exc:
        messages.error(request, str(exc))
        return render(request, "library/client.html", {"client": found, "form": form, **_choices()}, status=400)
    messages.success(request, f"Saved {name}.")
    return redirect("client", name)


@staff_required
@require_http_methods(["GET", "POST"])
def revoke(request, name):
    """GET: a confirmation page. POST: revoke the token at once."""
    try:
        found = clients.get(name)
    except NotFound:
        return missing(request, f"client {name}")
    if request.method == "GET":
        return render(request, "library/client_revoke.html", {"client": found})
    clients.revoke(name)
    messages.success(request, f"Revoked {name}: its token no longer works.")
    return redirect("clients")
