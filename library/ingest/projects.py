"""Project tags (docs/design.md "Project tags"): which project an item belongs to, from what its source said.

The model proposes a slug, but a hint from the source wins, in this order:
1. the connector's fixed `project` option;
2. `[projects] paths` (path prefix → slug, longest prefix wins) applied to the working folder;
3. the git repository: its name from the remote URL when known, else the name of the
   folder holding `.git` (a worktree resolves to its main repository);
4. `[projects] roots`: the first folder below a root (`~` matches any home folder, since
   sessions come from other machines and users too);
5. the project a device sent with an upload;
6. the model's slug, normalised; else none.

`resolve()` is a pure function of the stored hints and the configuration, so `jezero retag`
can apply it again to stored items without a model; `project_for()` applies it with this
library's configuration (the pipeline, retag and re-summarise all call it). `find_git_root()` is the only part that
looks at the file system; the pipeline stores its answer in the hints (`git_root`).
"""

import re
import unicodedata
from pathlib import Path, PurePosixPath

from django.conf import settings

_INVALID = re.compile(r"[^a-z0-9._-]+")
_HOME_PREFIX = re.compile(r"^(/home/[^/]+|/Users/[^/]+|/root|[A-Za-z]:\\Users\\[^\\]+)")


def normalise(value):
    """A slug (lowercase `[a-z0-9._-]`), or None when nothing usable is left."""
    if not isinstance(value, str):
        return None
    folded = "".join(c for c in unicodedata.normalize("NFKD", value) if not unicodedata.combining(c))
    slug = _INVALID.sub("-", folded.strip().lower()).strip("-._")
    slug = re.sub(r"-{2,}", "-", slug)
    return slug[:100] or None


def repo_name_from_remote(url):
    """`git@github.com:ana/shop-site.git` / `https://host/ana/shop-site` → `shop-site`."""
    if not url:
        return None
    tail = re.split(r"[/:]", url.strip().rstrip("/"))[-1]
    if tail.endswith(".git"):
        tail = tail[:-4]
    return normalise(tail)


def _clean(path):
    return str(PurePosixPath(path)) if path else None


def _under(path, prefix):
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _from_paths(cwd, paths, home):
    best = None
    for prefix, slug in paths.items():
        expanded = _clean(prefix.replace("~", home, 1) if prefix.startswith("~") else prefix)
        if _under(cwd, expanded) and (best is None or len(expanded) > len(best[0])):
            best = (expanded, slug)
    return best[1] if best else None


def _from_roots(cwd, roots, home):
    for root in roots:
        if root.startswith("~/"):
            rest = root[2:].strip("/")
            match = _HOME_PREFIX.match(cwd)
            bases = {f"{match.group(1)}/{rest}"} if match else set()
            bases.add(f"{home}/{rest}")
        else:
            bases = {_clean(root)}
        for base in bases:
            if cwd.startswith(base.rstrip("/") + "/"):
                first = cwd[len(base.rstrip("/")) + 1:].split("/", 1)[0]
                if first:
                    return normalise(first)
    return None


def resolve(hints, *, fixed=None, paths=None, roots=(), home=None):
    """(slug or None, rule) for an item's hints; `rule` names the step that decided
    ("connector", "paths", "git", "roots", "device", "model" or None)."""
    if fixed:
        return normalise(fixed), "connector"
    home = home or str(Path.home())
    cwd = _clean(hints.get("cwd"))
    if cwd and paths:
        slug = _from_paths(cwd, paths, home)
        if slug:
            return slug, "paths"
    repo = repo_name_from_remote(hints.get("git_remote"))
    if not repo and hints.get("git_root"):
        repo = normalise(PurePosixPath(hints["git_root"]).name)
    if repo:
        return repo, "git"
    if cwd:
        slug = _from_roots(cwd, roots, home)
        if slug:
            return slug, "roots"
    device = normalise(hints.get("device_project"))
    if device:
        return device, "device"
    model = normalise(hints.get("model_project"))
    if model:
        return model, "model"
    return None, None


def find_git_root(cwd):
    """The main repository folder holding `.git` for a working folder on this machine, or
    None. A worktree's `.git` file points into the main repository's `.git/worktrees/…`,
    which resolves to the main repository."""
    if not cwd:
        return None
    try:
        folder = Path(cwd)
        for candidate in (folder, *folder.parents):
            dotgit = candidate / ".git"
            if dotgit.is_dir():
                return str(candidate)
            if dotgit.is_file():
                text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
                if text.startswith("gitdir:"):
                    gitdir = (candidate / text[7:].strip()).resolve()
                    if gitdir.parent.name == "worktrees":
                        return str(gitdir.parent.parent.parent)
                return str(candidate)
    except OSError:
        return None
    return None


def project_for(hints, source, fixed_projects=None):
    """The project of an item of connector `source` with these hints, by the configured rules.
    `fixed_projects` ({connector: project}, from `configured.fixed_projects()`) saves a lookup
    per item when many are tagged at once."""
    from library.ingest import configured

    conf = settings.JEZERO
    if fixed_projects is None:
        found = configured.find(source)
        fixed = found["project"] if found else None
    else:
        fixed = fixed_projects.get(source)
    slug, _rule = resolve(hints, fixed=fixed, paths=conf["projects"]["paths"], roots=conf["projects"]["roots"])
    return slug
