"""Django's admin for raw records. Writes go through the Item model, which keeps the index."""

from django.contrib import admin

from library.models import Item, StoreState


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "project", "source", "trust", "occurred_at", "summarizer")
    list_filter = ("trust", "source", "project")
    search_fields = ("=id", "key", "title")
    readonly_fields = ("ingested_at", "updated_at", "text_hash", "input_tokens", "output_tokens")
    date_hierarchy = "occurred_at"

    def has_delete_permission(self, request, obj=None):
        # A delete here would leave no tombstone: the next run could bring the item back.
        # Forgetting is the item page's "Forget…" (library.forget).
        return False


admin.site.register(StoreState)
