from django.apps import AppConfig
from django.db.models.signals import post_migrate


class LibraryConfig(AppConfig):
    name = "library"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from library import checks  # noqa: F401  (registers the system checks)

        post_migrate.connect(_ensure_index, sender=self)


def _ensure_index(using, **kwargs):
    # `flush` (and the test runner after each transactional test) empties Django's tables
    # and then sends post_migrate; the FTS table is not a Django model, so it is brought back
    # in line here rather than left holding rows for items that no longer exist.
    from library import store

    store.ensure_index(using=using)
