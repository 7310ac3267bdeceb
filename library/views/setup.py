"""The one-time setup page (`/setup/`): while no admin exists and `jezero init --setup-page`
has printed a code, a person enters that code, a user name and a password, becomes the first
admin and is logged in. Otherwise the page does not exist (404) for anyone.

Wrong codes are failed logins for django-axes (under `first_admin.LOCKOUT_NAME` and the
address), so they lock out like wrong passwords; the code travels in the POST body only."""

from axes.handlers.proxy import AxesProxyHandler
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.signals import user_login_failed
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from library.access import first_admin
from library.errors import BadInput

_CREDENTIALS = {"username": first_admin.LOCKOUT_NAME}
_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _locked(request):
    return render(request, "registration/locked_out.html", status=429)


def _page(request, form, errors, status=200):
    return render(request, "registration/setup.html",
                  {"form": form, "errors": errors, "rules": first_admin.password_rules()}, status=status)


def _errors(data):
    """The checks that need no code: name and password, each list beside its field."""
    username, password, again = data["username"], data["password"], data["password_again"]
    errors = {"username": first_admin.username_problems(username) if username else ["Enter a user name."]}
    if not password:
        errors["password"] = ["Enter a password."]
    else:
        errors["password"] = first_admin.password_problems(password, username)
    errors["password_again"] = ["The two passwords differ."] if password and again != password else []
    return {field: problems for field, problems in errors.items() if problems}


@never_cache
@sensitive_post_parameters("code", "password", "password_again")
@require_http_methods(["GET", "POST"])
def setup(request):
    """GET: the form. POST: check the code (counted by axes when wrong), then the name and the
    password (errors beside the fields, the code kept), create the admin, log in, go home."""
    if not first_admin.setup_pending():
        raise Http404("no setup is pending")
    if request.method == "GET":
        return _page(request, {}, {})
    if AxesProxyHandler.is_locked(request, _CREDENTIALS):
        return _locked(request)
    data = {name: request.POST.get(name) or "" for name in ("code", "username", "password", "password_again")}
    data["username"] = data["username"].strip()
    if not first_admin.code_matches(data["code"]):
        user_login_failed.send(sender=__name__, credentials=_CREDENTIALS, request=request)
        if getattr(request, "axes_locked_out", False):
            return _locked(request)  # that was the last try allowed
        form = {"username": data["username"]}
        return _page(request, form, {"code": ["That is not a setup code printed by `jezero init`."]}, status=400)
    errors = _errors(data)
    if not errors:
        try:
            user = first_admin.create_admin(data["username"], data["password"])
        except first_admin.AdminExists:
            raise Http404("an admin exists") from None
        except BadInput as exc:  # a name taken between the check and the insert
            errors = {"username": [str(exc)]}
    if errors:
        form = {"code": data["code"], "username": data["username"]}
        return _page(request, form, errors, status=400)
    login(request, user, backend=_MODEL_BACKEND)
    messages.success(request, f"Welcome, {user.get_username()}: you are this Jezero's admin.")
    return redirect("search")
