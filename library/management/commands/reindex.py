from library import store
from library.cli import Progress, Verb


class Command(Verb):
    help = ("Rebuild the full-text indexes from the items — the record index with storage.tokenizer, the "
            "record word index and the original-text index with storage.original_tokenizer (e.g. after "
            "changing either).")

    def add_arguments(self, parser):
        parser.add_argument("--only", choices=tuple(index.name for index in store.INDEXES),
                            help="rebuild one of the indexes")

    def handle(self, *args, **opts):
        previous = store.recorded_tokenizers()
        bars = {}

        def progress(label, done, total):
            bars.setdefault(label, Progress(f"reindex: {label}"))(done, total)

        try:
            count = store.rebuild(only=opts["only"], progress=progress)
        finally:
            for bar in bars.values():
                bar.__exit__(None, None, None)
        tokenizers = store.configured_tokenizers()
        if opts["only"]:
            tokenizers = {opts["only"]: tokenizers[opts["only"]]}
        if opts["json"]:
            self.emit_json({"indexed": count, "tokenizers": tokenizers,
                            "previous_tokenizers": {k: previous[k] for k in tokenizers},
                            # the record index's, under the names this verb has always printed
                            "tokenizer": store.configured_tokenizer(), "previous_tokenizer": previous["record"]})
        else:
            for name, tokenizer in tokenizers.items():
                self.stdout.write(f"indexed {count} item(s) in the {name} index with tokenizer {tokenizer!r}")
