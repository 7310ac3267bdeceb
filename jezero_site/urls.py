"""URL map. Pages and APIs arrive with later work; for now the admin and /health."""

from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from library import views

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/library/item/", permanent=False)),
    path("health", views.health, name="health"),
    path("admin/", admin.site.urls),
]
