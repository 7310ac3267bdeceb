"""People with allowed sources (docs/design.md "People"): a `people` row per web user holding the
globs of the sources that user may read. Every user that exists when this runs gets `["*"]`,
so nobody loses what they could read before; a user made afterwards without a row reads
nothing until staff give them sources (staff read everything regardless). Frozen code: the
historical models, not today's `library.access.people`."""

from django.conf import settings
from django.db import migrations, models

EVERYTHING = ["*"]


def everyone_keeps_everything(apps, schema_editor):
    users = apps.get_model(settings.AUTH_USER_MODEL)
    people = apps.get_model("library", "Person")
    db = schema_editor.connection.alias
    people.objects.using(db).bulk_create(
        [people(user_id=pk, sources=EVERYTHING) for pk in users.objects.using(db).values_list("pk", flat=True)])


class Migration(migrations.Migration):

    dependencies = [
        ("library", "0014_postings"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Person",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sources", models.JSONField(blank=True, default=list)),
                ("user", models.OneToOneField(on_delete=models.deletion.CASCADE, related_name="person",
                                              to=settings.AUTH_USER_MODEL)),
            ],
            options={"db_table": "people"},
        ),
        migrations.RunPython(everyone_keeps_everything, migrations.RunPython.noop),
    ]
