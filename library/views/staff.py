"""Access rules shared by the staff pages and actions (docs/design.md "Access", "The web app"): every page needs a
login (anonymous visitors go to the login page); admin pages and actions also need a staff
user, and answer 403 with a short page to anyone else. Also the small page for a missing
connector, client or job."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.shortcuts import render


def staff_required(view):
    """Login required, then staff required (403 for a logged-in person without staff rights)."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_staff:
            return render(request, "library/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return login_required(wrapper)


def missing(request, what):
    """A 404 page naming what was not found (`what` is plain text; the template escapes it)."""
    return render(request, "library/missing.html", {"what": what}, status=404)
