from django.core.management.base import CommandError

from library.cli import Verb
from library.ingest import configured, sources
from library.models import RunReport, UnitCursor

# Typed flags for the options most connectors set; anything else is `--option key=value`.
FLAGS = (("path", "--path"), ("trust", "--trust"), ("interval_minutes", "--interval-minutes"),
         ("settle_minutes", "--settle-minutes"), ("project", "--project"))
WORDS = {"list": (), "reset": ("NAME",), "remove": ("NAME",), "edit": ("NAME",), "add": ("TYPE", "NAME")}


class Command(Verb):
    help = ("List, add, edit and remove connectors, or reset one's cursor (the next run reads its source again). "
            "Connectors added here live in the database and the worker picks them up without a restart; "
            "those in jezero.toml are read-only here.")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=tuple(WORDS))
        parser.add_argument("words", nargs="*", metavar="TYPE NAME",
                            help="add: the type and the name; edit, remove, reset: the name")
        for key, flag in FLAGS:
            parser.add_argument(flag, dest=key, help=f"the connector's {key} (add, edit)")
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--enabled", dest="enabled", action="store_const", const="true",
                           help="run it on schedule (the default for add)")
        state.add_argument("--disabled", dest="enabled", action="store_const", const="false",
                           help="keep it but never run it on schedule")
        parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                            help="any other option of the type; repeat for a list (folders=INBOX --option "
                                 "folders=Sent); an empty value puts the key back to its default (edit)")

    def _values(self, opts):
        values = {}
        for item in opts["option"]:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise CommandError(f"--option: {item!r} must be KEY=VALUE")
            values.setdefault(key.strip(), []).append(value)
        values = {key: found[0] if len(found) == 1 else found for key, found in values.items()}
        for key, _flag in (*FLAGS, ("enabled", "")):
            if opts[key] is not None:
                values[key] = opts[key]
        return values

    def handle(self, *args, **opts):
        action, words = opts["action"], opts["words"]
        wanted = WORDS[action]
        if len(words) != len(wanted):
            raise CommandError(f"{action} needs {' and '.join(wanted) or 'no more words'}"
                               + (f", got {' '.join(words)!r}" if words else ""))
        values = self._values(opts)
        if values and action not in ("add", "edit"):
            raise CommandError(f"{action} takes no options")
        if action == "list":
            return self._list(opts)
        name = words[-1]
        if action == "reset":
            deleted = sources.reset(name)
            self._say(opts, {"connector": name, "forgotten_units": deleted},
                      f"{name}: forgot {deleted} unit cursor(s); the next run reads the source again "
                      "(unchanged segments cost no model call)")
        elif action == "add":
            config = configured.add(words[0], name, values)
            self._say(opts, {"connector": config},
                      f"added connector {name} ({config['type']}{_reads(config)}); "
                      + ("the worker runs it within 5 minutes, then every "
                         f"{config['interval_minutes']} min; `jezero run --connector {name}` runs it now"
                         if config["enabled"] else "disabled: it is never run on schedule"))
        elif action == "edit":
            if not values:
                raise CommandError("edit: say what to change (--path, --interval-minutes, --option KEY=VALUE, …)")
            config = configured.edit(name, values)
            self._say(opts, {"connector": config}, f"changed connector {name}; the worker uses the change at its "
                                                  "next check, without a restart")
        else:
            removed = configured.remove(name)
            self._say(opts, {"connector": name, "items_kept": removed.items_kept,
                             "forgotten_units": removed.cursors_forgotten},
                      f"removed connector {name}: its {removed.items_kept} item(s) are kept (source {name}); "
                      f"forgot {removed.cursors_forgotten} unit cursor(s)")

    def _say(self, opts, data, line):
        if opts["json"]:
            self.emit_json(data)
        else:
            self.stdout.write(line)

    def _list(self, opts):
        rows = []
        for entry in configured.defined():
            config = entry.config or {}
            last = RunReport.objects.filter(connector=entry.name).first()
            rows.append({
                "name": entry.name, "type": entry.type, "origin": entry.origin, "problem": entry.problem or None,
                "trust": config.get("trust"), "enabled": config.get("enabled", False),
                "interval_minutes": config.get("interval_minutes"),
                "units_known": UnitCursor.objects.filter(connector=entry.name).count(),
                "last_run": last.started_at.isoformat() if last else None,
                "last_outcome": last.outcome if last else None,
            })
        if opts["json"]:
            self.emit_json({"connectors": rows})
            return
        if not rows:
            self.stdout.write("no connectors yet: jezero connector add TYPE NAME --path FOLDER "
                              "(or Sources → Add connector in the web app)")
        for row in rows:
            where = "jezero.toml" if row["origin"] == configured.FILE else "database"
            self.stdout.write(f"{row['name']}  {row['type']}  ({where})  trust {row['trust']}  every "
                              f"{row['interval_minutes']} min{'' if row['enabled'] else '  (disabled)'}  units "
                              f"{row['units_known']}  last run {row['last_run'] or 'never'} {row['last_outcome'] or ''}")
            if row["problem"]:
                self.stdout.write(f"  PROBLEM: {row['problem']}")


def _reads(config):
    where = config.get("path") or config.get("host")
    return f", reads {where}" if where else ""
