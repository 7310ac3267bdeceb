"""Forget for good from the web app (staff): the item page's delete, and "forget" on a
project's and a source's timeline and on the Sources page. One page for all: GET says what
would go (units, items, uploaded sessions), POST forgets it (library.forget) and says how
many. Thin: the service does the work and the checks."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from library import forget, search
from library.errors import BadInput, NotFound
from library.views.staff import staff_required

_WHAT = ("source", "project", "unit")


def _asked(data):
    """The one thing asked for, as keyword arguments of `forget.plan`, and its words."""
    for name in _WHAT:
        value = (data.get(name) or "").strip()
        if value:
            return {name: value}, f"{name} {value}"
    raise BadInput("say what to forget: a source, a project or a unit")


@staff_required
@require_http_methods(["GET", "POST"])
def forget_page(request):
    try:
        asked, words = _asked(request.POST if request.method == "POST" else request.GET)
        back = reverse("timeline") + ("" if "unit" in asked else "?" + urlencode(asked))
        return _confirm_or_forget(request, forget.plan(**asked), words, back=back, fields=asked)
    except (BadInput, NotFound) as exc:
        return render(request, "library/missing.html", {"what": str(exc)}, status=404)


def forget_item(request, item_id):
    """The item page's delete (library.views.items.delete): the item's whole unit is forgotten."""
    try:
        plan = forget.plan(ids=[item_id])
        item = search.get_item(item_id, allowed_sources=search.ALL_SOURCES)
    except NotFound:
        return render(request, "library/not_found.html", {"item_id": item_id}, status=404)
    return _confirm_or_forget(request, plan, f"item #{item_id}", back=reverse("item", args=[item_id]),
                              action=reverse("item-delete", args=[item_id]), item=item)


def _confirm_or_forget(request, plan, words, *, back, action=None, fields=None, item=None):
    if request.method == "POST":
        done = forget.forget(plan, by=request.user.get_username())
        messages.success(request, f"Forgot {done.items} item{'s' if done.items != 1 else ''} of {done.units} "
                                  f"unit{'s' if done.units != 1 else ''}" +
                                  (f" and {done.uploads} uploaded session{'s' if done.uploads != 1 else ''}"
                                   if done.uploads else "") + ". They will not come back.")
        return redirect("search")
    return render(request, "library/forget.html", {
        "plan": plan.as_dict(), "words": words, "back": back, "action": action or reverse("forget"),
        "fields": fields or {}, "item": item,
    })
