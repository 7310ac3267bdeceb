from library import search
from library.cli import Verb, later_text


class Command(Verb):
    help = "Show one item: every field; --original adds the redacted text it was written from."

    def add_arguments(self, parser):
        parser.add_argument("id", type=int, help="the item's id")
        parser.add_argument("--original", action="store_true", help="include the original (redacted) text")
        parser.add_argument("--newer", action="store_true", help="also list newer items on the same subject (later)")

    def handle(self, *args, **opts):
        item = search.get_item(opts["id"], allowed_sources=search.ALL_SOURCES, include_original=opts["original"])
        newer = search.later(opts["id"], allowed_sources=search.ALL_SOURCES) if opts["newer"] else None
        if opts["json"]:
            data = dict(item)
            if newer is not None:
                data["later"] = newer.as_dict()
            self.emit_json(data)
            return
        out = [f"[{item['id']}] {item['title']}",
               f"{item['occurred_at']}  project: {item['project'] or '-'}  source: {item['source']}  "
               f"trust: {item['trust']}  key: {item['key']}",
               f"summarizer: {item['summarizer'] or '-'}  tokens: {item['input_tokens']} in, {item['output_tokens']} out",
               "", item["summary"]]
        if item["questions"]:
            out += ["", "Questions:"] + [f"  - {q}" for q in item["questions"]]
        if item["atoms"]:
            out += ["", "Atoms:"] + [f"  {atom['kind']}: {atom['text']}" for atom in item["atoms"]]
        if opts["original"]:
            out += ["", "Original:", item["original"] or "(none stored)"]
        if newer is not None:
            out += ["", later_text(newer)]
        self.stdout.write("\n".join(out))
