"""The names of the connector types, with nothing imported: the one list the configuration
(`jezero_site.config`, loaded before anything else) and the registry both use. The registry
maps each name that has a reader to its class (and a test holds the two in step); `upload` is
read by the library's device inbox instead."""

# Agent sessions (docs/design.md "Connectors"): `min_chars` is 400 for these by default, 0 for the others.
AGENT_TYPES = ("claude_code", "codex", "hermes", "gemini_cli", "pi", "opencode", "specstory", "upload")
# Every type the configuration accepts.
TYPES = (*AGENT_TYPES, "imap", "markdown")
UPLOAD = "upload"
