import sys

from django.core.management.base import CommandError

from library.cli import Verb
from library.ingest.summarize import configuration

ACTIONS = ("show", "set", "unset", "test", "set-key", "remove-key")
KEY_ORIGINS = {"env": "the environment variable {variable}", "env_file": "the file named by {variable}_FILE",
               "file": "the key saved with Settings / set-key"}


class Command(Verb):
    help = ("Show, set, clear and test the summariser, as the web app's Settings page does. A value set here "
            "overrides jezero.toml's [summarizer] key by key and is used from the worker's next run, without a "
            "restart; `unset` puts the file's value (or the default) back. `set-key` reads an API key from stdin "
            "(never from the command line) into a file in the data folder (mode 0600).")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=ACTIONS)
        parser.add_argument("words", nargs="*", metavar="KEY[=VALUE]",
                            help="set: KEY=VALUE … (repeat a list key for each item; an empty value clears it); "
                                 "unset: KEY …")

    def handle(self, *args, **opts):
        action, words = opts["action"], opts["words"]
        if action in ("show", "test", "set-key", "remove-key") and words:
            raise CommandError(f"{action} takes no KEY words")
        if action in ("set", "unset") and not words:
            raise CommandError(f"{action}: say which keys ({', '.join(configuration.EDITABLE)})")
        if action == "show":
            return self._show(opts)
        if action == "set":
            configuration.change(self._values(words))
            if not opts["json"]:
                self.stdout.write("saved; the worker uses it from its next run")
            return self._show(opts)
        if action == "unset":
            cleared = configuration.unset(words)
            if not opts["json"]:
                self.stdout.write(f"cleared {', '.join(cleared)}" if cleared else "nothing was set here")
            return self._show(opts)
        if action == "set-key":
            status = configuration.save_key(sys.stdin.readline())
            self._say(opts, {"saved": True, "ends_in": status.tail or None},
                      f"API key saved in {configuration.key_path()} (mode 0600)"
                      + (f", ends in …{status.tail}" if status.tail else ""))
            return None
        if action == "remove-key":
            removed = configuration.remove_key()
            self._say(opts, {"removed": removed}, "removed the saved API key" if removed else "no API key was saved")
            return None
        result = configuration.test()
        if opts["json"]:
            self.emit_json(result.as_dict())
            return None
        record = result.record
        self.stdout.write(f"{result.summarizer} answered in {result.seconds} s "
                          f"({result.input_tokens} tokens in, {result.output_tokens} out):")
        self.stdout.write(f"  title: {record['title']}")
        self.stdout.write(f"  summary: {record['summary']}")
        for question in record["questions"]:
            self.stdout.write(f"  question: {question}")
        for atom in record["atoms"]:
            self.stdout.write(f"  {atom['kind']}: {atom['text']}")
        return None

    def _values(self, words):
        values = {}
        for word in words:
            key, sep, value = word.partition("=")
            if not sep or not key.strip():
                raise CommandError(f"set: {word!r} must be KEY=VALUE")
            values.setdefault(key.strip(), []).append(value)
        return {key: found[0] if len(found) == 1 else found for key, found in values.items()}

    def _say(self, opts, data, line):
        if opts["json"]:
            self.emit_json(data)
        else:
            self.stdout.write(line)

    def _show(self, opts):
        described = configuration.describe()
        key = configuration.key_status(described.config)
        rows = [{"key": v.name, "value": v.value, "from": v.origin_label, "editable": v.editable}
                for v in described.values.values()]
        api_key = {"needed": key.needed, "variable": key.variable, "from": key.origin, "saved_here": key.saved,
                   "ends_in": key.tail or None}
        if opts["json"]:
            self.emit_json({"summarizer": rows, "api_key": api_key, "problems": described.problems})
            return
        width = max(len(row["key"]) for row in rows)
        for row in rows:
            value = row["value"]
            text = "-" if value in (None, [], "") else ", ".join(value) if isinstance(value, list) else str(value)
            note = "" if row["editable"] else "  (jezero.toml only)"
            self.stdout.write(f"{row['key']:<{width}}  {text}  [{row['from']}]{note}")
        if key.needed:
            where = KEY_ORIGINS.get(key.origin, "none: set {variable} or run `jezero summarizer set-key`")
            self.stdout.write(f"{'api key':<{width}}  from {where.format(variable=key.variable)}"
                              + (f" (saved key ends in …{key.tail})" if key.saved and key.tail else ""))
        elif key.saved:
            self.stdout.write(f"{'api key':<{width}}  saved, unused by provider {described.config['provider']}")
        for name, problem in described.problems.items():
            self.stdout.write(f"PROBLEM {name}: {problem}")
