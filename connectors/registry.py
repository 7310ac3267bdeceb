"""Which class reads which connector `type`, and how one is built from its configuration.

Each type registers its class in `CONNECTOR_TYPES`; every class satisfies `base.Connector`
(it takes the expanded `path` and the rest of the connector's configuration as keyword
options, ignoring those it does not use). The names are `types.TYPES`; the `upload` type is
not here: its units live in the library's inbox, which the pipeline reads directly.
"""

import os
from pathlib import Path

from .base import Connector, Unit, UnitError
from .claude_code import ClaudeCodeConnector
from .codex import CodexConnector
from .gemini_cli import GeminiCliConnector
from .hermes import HermesConnector
from .imap import ImapConnector
from .markdown import MarkdownConnector
from .opencode import OpenCodeConnector
from .pi import PiConnector
from .specstory import SpecStoryConnector

CONNECTOR_TYPES: dict[str, type[Connector]] = {
    "claude_code": ClaudeCodeConnector,
    "codex": CodexConnector,
    "gemini_cli": GeminiCliConnector,
    "pi": PiConnector,
    "hermes": HermesConnector,
    "opencode": OpenCodeConnector,
    "specstory": SpecStoryConnector,
    "markdown": MarkdownConnector,
    "imap": ImapConnector,
}


def make(type_name: str, options: dict) -> Connector:
    """A connector of `type_name` built from a connector configuration (`options` is not
    changed; `path` has `~` expanded). Raises ValueError for a type with no reader."""
    try:
        cls = CONNECTOR_TYPES[type_name]
    except KeyError:
        known = ", ".join(sorted(CONNECTOR_TYPES))
        raise ValueError(f"no reader for connector type {type_name!r} (available: {known})") from None
    options = dict(options)
    path = options.pop("path", None)
    if path is None:
        return cls(**options)
    return cls(os.path.expanduser(str(path)), **options)


def for_file(type_name: str, path) -> tuple[Connector, Unit]:
    """`(connector, unit)` for one file read as `type_name` (the `preview` command).
    Raises UnitError when the file is missing; ValueError for an unknown type."""
    connector = make(type_name, {"path": str(path)})
    unit = next(iter(connector.discover()), None)
    if unit is None:
        raise UnitError(f"{Path(path).expanduser()}: no such file")
    return connector, unit
