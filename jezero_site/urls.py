"""URL map. Stable paths, so bookmarks and shared links last (MCP is routed in jezero_site.asgi)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from library.access.api import api, not_found
from library.views import agent, clients, forgetting, health, items, pages, setup, sources, summarizer, tools, users

urlpatterns = [
    path("", pages.search, name="search"),
    path("items/<int:item_id>/", pages.item, name="item"),
    path("timeline/", pages.timeline, name="timeline"),
    path("projects/", pages.projects, name="projects"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("setup/", setup.setup, name="setup"),  # the first admin, once (library.access.first_admin)
    path("api/v1/", api.urls),
    re_path(r"^api/", not_found),  # any other path under /api/: a JSON 404, not an HTML page
    path("health", health.health, name="health"),
    path("admin/", admin.site.urls),
]

# Staff actions, sources, admin tools, clients, users, the agent view and settings (docs/design.md "The web app").
urlpatterns += [
    path("items/<int:item_id>/resummarize/", items.resummarize, name="item-resummarize"),
    path("items/<int:item_id>/retag/", items.retag, name="item-retag"),
    path("items/<int:item_id>/delete/", items.delete, name="item-delete"),
    path("forget/", forgetting.forget_page, name="forget"),
    path("sources/", sources.sources, name="sources"),
    path("sources/<str:name>/run/", sources.run, name="source-run"),
    path("sources/<str:name>/dry-run/", sources.dry_run, name="source-dry-run"),
    path("sources/<str:name>/reset/", sources.reset, name="source-reset"),
    path("sources/add/", sources.add, name="source-add"),
    path("sources/<str:name>/edit/", sources.edit, name="source-edit"),
    path("sources/<str:name>/enabled/", sources.enabled, name="source-enabled"),
    path("sources/<str:name>/delete/", sources.delete, name="source-delete"),
    path("admin-tools/", tools.admin_tools, name="admin-tools"),
    path("admin-tools/retag/", tools.retag_all, name="admin-retag"),
    path("admin-tools/redact/preview/", tools.redact_preview, name="admin-redact-preview"),
    path("admin-tools/redact/apply/", tools.redact_apply, name="admin-redact-apply"),
    path("admin-tools/resummarize/", tools.resummarize, name="admin-resummarize"),
    path("admin-tools/jobs/<int:job_id>/", tools.job, name="job"),
    path("clients/", clients.clients_page, name="clients"),
    path("clients/<str:name>/", clients.client, name="client"),
    path("clients/<str:name>/revoke/", clients.revoke, name="client-revoke"),
    path("users/", users.users_page, name="users"),
    path("users/<str:name>/", users.user, name="user"),
    path("users/<str:name>/deactivate/", users.deactivate, name="user-deactivate"),
    path("users/<str:name>/reactivate/", users.reactivate, name="user-reactivate"),
    path("agent-view/", agent.agent_view, name="agent-view"),
    path("settings/", summarizer.settings_page, name="settings"),
    path("settings/clear/", summarizer.clear, name="settings-clear"),
    path("settings/key/remove/", summarizer.remove_key, name="settings-key-remove"),
    path("settings/test/", summarizer.run_test, name="settings-test"),
]
