"""Migrations are frozen (docs/design.md "Upgrades and migrations"): each runs its own historical code — SQL written in it,
the historical models (`apps.get_model`), or a versioned helper module beside it that never
changes (`library/migrations/_v1_indexes.py`) — never today's library code, which would
silently change what an old migration does on a user's upgrade. Checked on the source."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MIGRATIONS = REPO / "library" / "migrations"
PROJECT = ("library", "jezero_site", "connectors", "plugins")   # our own packages
FROZEN = "library.migrations._v"        # versioned helpers: the only project code a migration may use
HELPER = re.compile(r"_v\d+_\w+\.py")


def imported(source, package="library.migrations"):
    """Every module (and `module.name`) a source imports, relative imports resolved, including
    imports inside functions and `importlib.import_module("…")` / `__import__("…")` calls."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names += [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names.append(str(node.args[0].value))
    return names


def todays_code(source):
    """The project modules a migration's source imports that are not frozen helpers."""
    return [name for name in imported(source)
            if name.split(".")[0] in PROJECT and name not in PROJECT and name != "library.migrations"
            and not name.startswith(FROZEN)]


def test_no_migration_or_helper_imports_todays_code():
    """Not `library.store`, `library.meaning`, `library.models`, `library.search`, … nor the
    Django project: only Django, the standard library, third-party packages and `_v<N>_` helpers."""
    offenders = {path.name: todays_code(path.read_text(encoding="utf-8")) for path in sorted(MIGRATIONS.glob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_every_helper_beside_the_migrations_is_versioned():
    """A module there that is not a migration is a `_v<N>_…` helper: changing what it does means
    a new version (and a new migration), never an edit that old migrations would pick up."""
    helpers = [path.name for path in MIGRATIONS.glob("_*.py") if path.name != "__init__.py"]
    assert helpers and [name for name in helpers if not HELPER.fullmatch(name)] == []


def test_the_check_sees_every_way_of_reaching_todays_code():
    """What the migrations did before they were frozen, and the other spellings of it."""
    caught = {
        "def create(apps, schema_editor):\n    from library import store\n    store.rebuild()": ["library.store"],
        "import library.meaning": ["library.meaning"],
        "from library.models import Item": ["library.models", "library.models.Item"],
        "from .. import search": ["library.search"],
        "from ..postings import create": ["library.postings", "library.postings.create"],
        "import importlib\nimportlib.import_module('library.catalog')": ["library.catalog"],
        "from jezero_site import settings": ["jezero_site.settings"],
    }
    for source, expected in caught.items():
        assert todays_code(source) == expected, source
    allowed = ("from django.db import migrations, models\nfrom django.conf import settings\nimport numpy\n"
               "from library.migrations._v1_indexes import fill\nfrom library.migrations import _v1_vectors\n"
               "from . import _v2_postings\nfrom ._v1_indexes import digest\n"
               "model = apps.get_model('library', 'Item')")
    assert todays_code(allowed) == []
