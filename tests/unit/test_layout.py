"""The house's rules, checked on the source: who may import whom (issue 11)."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def imports(path):
    """Every module name a file imports (absolute, or relative resolved to its package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def test_library_never_imports_the_django_project():
    """jezero_site wires library up; library does not reach back for settings helpers or names."""
    offenders = [f"{path.relative_to(REPO)}: {name}" for path in (REPO / "library").rglob("*.py")
                 for name in imports(path) if name == "jezero_site" or name.startswith("jezero_site.")]
    assert offenders == []


def test_the_vocabulary_and_the_connectors_need_no_django():
    """The configuration loads them before Django is set up."""
    files = [REPO / "library" / "vocabulary.py", REPO / "library" / "schema.py", *(REPO / "connectors").rglob("*.py")]
    offenders = [f"{path.relative_to(REPO)}: {name}" for path in files for name in imports(path)
                 if name == "django" or name.startswith(("django.", "library.models", "library.ingest"))]
    assert offenders == []
