from django.core.management.base import CommandError

from library.access import clients
from library.cli import Verb
from library.models import Client


class Command(Verb):
    help = "Manage the agents and devices that use the API and MCP: add (prints the token once), list, revoke."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("add", "list", "revoke"))
        parser.add_argument("name", nargs="?", help="the client's name (add, revoke)")
        parser.add_argument("--sources", default="", help="allowed-source globs, e.g. 'agent-*,mail-*' (default: none)")
        parser.add_argument("--scopes", default="read", help="read and/or upload, comma-separated (default read)")
        parser.add_argument("--upload-source", default="", help="the source this client's uploads land in (default "
                            "uploads-NAME); an upload connector of that name is added when there is none")
        parser.add_argument("--no-sources", action="store_true",
                            help="a reading client that may read no source yet, on purpose")

    def handle(self, *args, **opts):
        action, name = opts["action"], opts["name"]
        if action in ("add", "revoke") and not name:
            raise CommandError(f"{action} needs the client's name")
        if action == "add":
            client, token = clients.create(name, sources=opts["sources"], scopes=opts["scopes"],
                                           upload_source=opts["upload_source"], no_sources=opts["no_sources"])
            data = {"name": client.name, "token": token, "sources": client.sources, "scopes": client.scopes}
            if client.upload_source:
                data["upload_source"] = client.upload_source
            if opts["json"]:
                self.emit_json(data)
                return
            self.stdout.write(f"client {client.name}: sources {', '.join(client.sources) or '(none)'}; "
                              f"scopes {', '.join(client.scopes)}")
            if client.upload_source:
                self.stdout.write(f"uploads land in source {client.upload_source}: the upload connector of that name "
                                  "turns them into items")
            self.stdout.write(f"token (shown once, keep it secret): {token}")
            return
        if action == "revoke":
            client = clients.revoke(name)
            if opts["json"]:
                self.emit_json({"name": client.name, "revoked_at": client.revoked_at.isoformat()})
            else:
                self.stdout.write(f"client {client.name}: revoked; its token no longer works")
            return
        rows = [{"name": c.name, "sources": c.sources, "scopes": c.scopes, "upload_source": c.upload_source,
                 "created_at": c.created_at.isoformat(),
                 "last_used_at": c.last_used_at.isoformat() if c.last_used_at else None,
                 "revoked": c.revoked_at is not None} for c in Client.objects.all()]
        if opts["json"]:
            self.emit_json({"clients": rows})
            return
        for row in rows:
            state = "revoked" if row["revoked"] else f"last used {row['last_used_at'] or 'never'}"
            self.stdout.write(f"{row['name']}  sources {','.join(row['sources']) or '-'}  scopes "
                              f"{','.join(row['scopes'])}  {state}")
        if not rows:
            self.stdout.write("no clients yet: jezero client add NAME --sources 'agent-*' --scopes read,upload")
