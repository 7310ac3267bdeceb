"""The names Jezero's records are made of, in one place and without Django, so that the
configuration (`jezero_site.config`), the records, the summariser's schema, the clients and
the views all check the same thing: a project slug, a source name, the atom kinds (docs/design.md "Items":
exactly these seven) and the trust levels."""

import re

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")          # a project: lowercase letters, digits, . _ -
SOURCE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")   # a connector's name, the items' source
# An allowed-source glob (clients, people): what a source name holds and fnmatch's * ? [ ] !
SOURCE_GLOB_RE = re.compile(r"^[A-Za-z0-9._*?\[\]!-]+$")
ATOM_KINDS = ("decision", "rationale", "fix", "command", "error", "fact", "risk")
# The order a person reads them in on an item's page: what was decided and what could go wrong
# first, the evidence after.
ATOM_DISPLAY_ORDER = ("decision", "risk", "fix", "error", "command", "fact", "rationale")
assert sorted(ATOM_DISPLAY_ORDER) == sorted(ATOM_KINDS)
TRUST_LEVELS = ("own", "external")
