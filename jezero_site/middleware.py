"""Response headers Django 5.2 does not set by itself (its CSP support arrives in 6.0), and the
redirect to the one-time setup page while the first admin is still to be made."""

from django.conf import settings
from django.shortcuts import redirect

from library.access import first_admin


class ContentSecurityPolicy:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class FirstAdminSetup:
    """While a setup code is pending and no admin exists, every page sends the browser to
    /setup/ — except /setup/ itself, /health, the static files and the token-authenticated
    API (`/api/`; MCP never reaches Django's middleware). Costs one file check per request
    otherwise (`first_admin.setup_pending`), no query."""

    OPEN = ("/setup/", "/health", "/api/", "/" + settings.STATIC_URL.lstrip("/"))

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(self.OPEN) and first_admin.setup_pending():
            return redirect("setup")
        return self.get_response(request)
