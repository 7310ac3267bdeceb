from library import store
from library.cli import Verb


class Command(Verb):
    help = "Rebuild the full-text index from the items with storage.tokenizer (e.g. after changing it)."

    def handle(self, *args, **opts):
        previous = store.recorded_tokenizer()
        count = store.rebuild()
        tokenizer = store.configured_tokenizer()
        if opts["json"]:
            self.emit_json({"indexed": count, "tokenizer": tokenizer, "previous_tokenizer": previous})
        else:
            self.stdout.write(f"indexed {count} item(s) with tokenizer {tokenizer!r}")
