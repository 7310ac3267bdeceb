"""URL map: the JSON API, /health and the admin (MCP is routed in jezero_site.asgi)."""

from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from library import views
from library.api import api

urlpatterns = [
    path("api/v1/", api.urls),
    path("", RedirectView.as_view(url="/admin/library/item/", permanent=False)),
    path("health", views.health, name="health"),
    path("admin/", admin.site.urls),
]
