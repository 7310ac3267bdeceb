"""Configured exclusions (docs/design.md "Kept out"): folders and projects that are never read.

`[privacy]` in jezero.toml holds the global ones, each connector may add its own (both
`exclude_paths` and `exclude_projects`). A path glob excludes a unit whose file, or whose
session's working folder (`cwd`), or any folder above either, matches it (`~` is the home
folder; `*` matches across `/`): `~/clients/acme` keeps out everything under that folder,
`*/medical/*` every path with a `medical` folder in it. A project slug excludes the units the
project rules give that project. A file that is excluded is not opened; a session whose
working folder or project is excluded is dropped right after it is read, before anything is
redacted, hashed, stored, logged or sent. Items stored before an exclusion was added stay
until they are forgotten (`jezero forget --project P`).
"""

import os
from fnmatch import fnmatchcase
from pathlib import PurePath

from django.conf import settings


def _expand(glob):
    return os.path.expanduser(glob.strip()).rstrip("/") or "/"


class Exclusions:
    """The exclusions that apply to one connector (its own and the global ones)."""

    def __init__(self, config=None):
        config = config or {}
        privacy = settings.JEZERO["privacy"]
        self.paths = [_expand(g) for g in (*privacy["exclude_paths"], *config.get("exclude_paths", ())) if g.strip()]
        self.projects = {*privacy["exclude_projects"], *config.get("exclude_projects", ())}

    def __bool__(self):
        return bool(self.paths or self.projects)

    def path(self, path):
        """Whether a file or folder, or a folder above it, matches a path glob."""
        if not path or not self.paths:
            return False
        path = PurePath(os.path.expanduser(str(path)))
        candidates = [str(path), *(str(parent) for parent in path.parents)]
        return any(fnmatchcase(candidate, glob) for glob in self.paths for candidate in candidates)

    def reason(self, hints, project):
        """Why a unit read with these hints and given this project is excluded, in words
        without its content; None when it is not."""
        for key in ("cwd", "git_root"):
            if self.path(hints.get(key)):
                return "working folder excluded"
        if project and project in self.projects:
            return "project excluded"
        return None
