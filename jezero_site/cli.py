"""The `jezero` command: Django's management commands under a friendlier name.

`jezero import-jsonl` runs the `import_jsonl` command; Django's own (`migrate`,
`createsuperuser`, …) work too. `jezero init` first writes the data folder, the config and
the secret key — things the settings need before Django can start — then runs the rest of
its work as a management command. Configuration mistakes print one line and exit 1; an
init stopped so, or refused, leaves nothing it made behind (`bootstrap.take_back`).
"""

import os
import sys

import jezero_site  # noqa: F401  (the bundled SQLite must be in place before Django loads)


def main(argv=None, prog="jezero"):
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")
    initializing = bool(argv) and argv[0] == "init"
    if initializing:
        from jezero_site import bootstrap

        try:
            bootstrap.prepare_data_folder(print)
        except bootstrap.BootstrapError as exc:
            print(f"{prog} init: {exc}", file=sys.stderr)
            bootstrap.take_back()   # a refused init leaves nothing behind (the init command does the same)
            return 1

    from django.core.exceptions import ImproperlyConfigured

    try:
        import django

        django.setup()
    except ImproperlyConfigured as exc:
        print(f"{prog}: configuration error: {exc}", file=sys.stderr)
        if initializing:
            bootstrap.take_back()
        return 1

    if initializing:
        from library.management.commands.init import Command as Init
        from library.management.commands.init import refused

        refused.connect(lambda **_: bootstrap.take_back(), sender=Init, weak=False)

    from django.core.management import ManagementUtility, get_commands

    if argv and not argv[0].startswith("-"):
        name = argv[0].replace("-", "_")
        if name in get_commands():
            argv[0] = name
        elif argv[0] not in ("help",):
            print(f"{prog}: unknown command {argv[0]!r}; `{prog} help` lists them", file=sys.stderr)
            return 2
    from django.db import OperationalError

    utility = ManagementUtility([prog, *argv])
    utility.prog_name = prog
    try:
        utility.execute()
        sys.stdout.flush()
    except OperationalError as exc:
        if str(exc) != "unable to open database file":
            raise
        from django.conf import settings

        print(f"{prog}: cannot open the database {settings.DATABASES['default']['NAME']}: it must be a file "
              "the user running jezero may read and write, in a folder it may write", file=sys.stderr)
        return 1
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BrokenPipeError:
        # The reader went away (`jezero export-jsonl | head`): stop quietly, like other tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0
