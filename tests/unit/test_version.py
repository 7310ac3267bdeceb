"""One version number: the package, what /health and MCP report (`library.__version__`), the
Claude Code plugin, its marketplace entry and the Codex plugin say the same."""

import json
import tomllib
from pathlib import Path

import library

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_the_server_and_the_plugin_give_one_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    plugin = json.loads((ROOT / "plugins" / "claude-code" / ".claude-plugin" / "plugin.json").read_text())["version"]
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    listed = {entry["version"] for entry in market["plugins"]}
    codex = json.loads((ROOT / "plugins" / ".codex-plugin" / "plugin.json").read_text())["version"]
    assert {library.__version__, project, plugin, codex, *listed} == {library.__version__}
