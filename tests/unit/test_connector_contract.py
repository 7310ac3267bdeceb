"""The connector contract (`connectors.base.Connector`) and the shape of the `connectors`
package: every registered type satisfies the contract, no connector imports another
connector's module (shared helpers live in modules named for what they hold), and nothing
in the package imports Django."""

import ast
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import Connector

PACKAGE = Path(registry.__file__).resolve().parent
# What a type needs besides the common options; the others read a `path`.
OPTIONS = {"imap": {"host": "imap.example.org", "user": "alice", "password_env": "MAIL_PASSWORD"}}


def modules():
    """(dotted name, path) of every module in the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(name, path):
    """The modules `path` imports (absolute names; `from . import x` counts as importing x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            found.add(module)
            if node.module is None:
                found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("type_name", sorted(registry.CONNECTOR_TYPES))
def test_every_registered_type_satisfies_the_connector_contract(type_name, tmp_path):
    """Built the way the pipeline builds it, without touching the source."""
    options = OPTIONS.get(type_name, {"path": str(tmp_path)})
    connector = registry.make(type_name, {**options, "name": "src", "trust": "own", "settle_minutes": 30})
    assert isinstance(connector, Connector)
    assert connector.type_name == type_name


def test_the_upload_inbox_satisfies_the_connector_contract():
    from library.ingest.upload_connector import InboxConnector

    assert isinstance(InboxConnector("phone"), Connector)


def test_no_connector_imports_another_connectors_module():
    """A connector module imports only shared helpers (base, files, text, tools, …) and its own
    package's modules; the registry alone knows them all."""
    connector_modules = {cls.__module__ for cls in registry.CONNECTOR_TYPES.values()}
    assert len(connector_modules) == len(registry.CONNECTOR_TYPES)
    for name, path in modules():
        if name == "connectors.registry":
            continue
        own = name if name in connector_modules else None
        for target in imported(name, path):
            other = next((module for module in connector_modules
                          if target == module or target.startswith(f"{module}.")), None)
            assert other is None or other == own or name.startswith(f"{other}."), f"{name} imports {target}"


def test_nothing_in_the_package_imports_django():
    for name, path in modules():
        assert not any(target.split(".")[0] == "django" for target in imported(name, path)), name


def test_the_registry_reads_every_configurable_type_but_the_inbox():
    """One list of type names (connectors.types) for the configuration and the registry."""
    from connectors import registry, types
    from library import schema

    assert set(registry.CONNECTOR_TYPES) == set(types.TYPES) - {types.UPLOAD}
    assert schema.CONNECTOR_TYPES == types.TYPES
