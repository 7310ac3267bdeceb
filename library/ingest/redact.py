"""Secret redaction (SPEC §4): the versioned rule set and the `Redactor` that applies it.

Every text that Jezero hashes, stores, logs or sends to a model passes through here first;
a secret becomes `[REDACTED:<kind>]`. The module owns the rules, their kinds and `VERSION`
(bump it whenever a rule changes: `jezero redact-stored` re-applies the rules to stored
items). Standard library only, no Django imports, so connectors and bench/ can use it.

Kinds: private-key (PEM/OpenSSH/PGP blocks, whole), aws-access-key-id, aws-secret-key (by
name, or 40 characters right after a key id), github-token, gitlab-token, slack-token,
slack-webhook, anthropic-key, openai-key (also other `sk-` keys), google-api-key,
google-oauth-secret, google-oauth-token, stripe-key (secret, restricted and webhook keys;
`pk_` keys are public by design and kept), jwt, npm-token, pypi-token, huggingface-token,
url-password (only the password: `postgres://app:[REDACTED:url-password]@db`),
bearer-token and basic-auth (`Authorization:` headers, `Bearer …`), password-assignment and
secret-assignment (generic `name = value`, below; also `mysql -p…`, `docker login -p`,
`sshpass -p`, `curl -u user:…`).

Why not a scanner library (measured here, 2 cores, on 69 planted secrets in context):
detect-secrets 1.5 (Yelp) reports values per line, not spans, and sometimes the wrong value
(`ghp` for a GitHub token, only the header line of a PEM block): it flagged 36 of 69 and
gave the whole secret for 21; it scans at 0.2 MB/s (0.6 without entropy plugins) and pulls
in PyYAML and requests. kingfisher-secret-scanner 1.5 (MongoDB, Rust) is fast (~150 MB/s)
with byte offsets, but its rules aim at precision: 38 of 69, none of the generic password
or token assignments, at any confidence; it is a 16 MB native wheel per platform that also
ships credential validation and revocation (code meant to send secrets to providers), and
its hundreds of rule ids would change under us on upgrade without `VERSION` changing.
scrubbers 0.1 masks with `*`, names no kind and missed URL passwords, OpenAI and Anthropic
keys and every generic assignment.

Favour recall: a missed secret is permanent, an extra marker costs a few words. Known token
shapes are matched broadly; care goes where code and prose look like assignments. A generic
assignment counts only when the name *ends* with a keyword (`DB_PASSWORD`, `clientSecret`,
`api_key`, `--token`; not `max_tokens`, `token_count`, `password_reset_url`; `pass`, `pwd`
and `key` need a prefix such as `db_`), and its value must pass a test that depends on
where it stands:

* literal context (`UPPER_CASE=value` env/shell lines, `?token=` in a URL, `--password=x`)
  and quoted literals: a password needs 4 characters; a token, secret or key needs 8, no
  spaces, and digits unless it has 20 or more (`"set-password"`, `'development key'` and
  `"NextToken"` are names, not keys); `--password x` (a separate argument) needs a digit,
  so "use --token instead" stays prose;
* a bare value in code or YAML (`token = x`, `password: x`): 8 characters with letters and
  digits, and not a reference (`settings.SECRET_KEY`), call (`get_token()`), subscript
  (`os.environ[...]`) or type (`PKCS7PrivateKeyTypes`). YAML `password: hunterhunter`
  (letters only) is therefore kept: a deliberate miss;
* a name ending in a plain `key` (`SORT_KEY`, `cacheKey`) needs a machine-made value: 16+
  characters, mixed case with digits, or hex.

Never a secret: None/null/true/false and similar literals, placeholders (`<your-token>`,
`xxxx`, `****`, `changeme`, `your_api_key_here`), references and templates (`$TOKEN`,
`${TOKEN}`, `%(password)s`, `{token}`, `{{ token }}`), and NAMES_IN_CAPITALS.

Markers: an existing `[REDACTED:<kind>]` is never touched and no match may overlap one;
overlapping matches merge into one marker of the more specific kind; a text in which
something was found is passed again until nothing changes, so `redact(redact(x)) ==
redact(x)` even where a rule's boundary depended on a neighbour that became a marker.

Speed (bench/redact.py): rules run on `text` or on `text.lower()` (same offsets) with a
literal first, so `re` skips ahead; a rule runs only if one of its gate characters (a
memchr) and one of its trigger substrings occur in the text. ~25 MB/s on transcript
blocks of ~380 characters on this machine, stdlib `re` only.
"""

import bisect
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

VERSION = 1

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
    characters and one of its lowercase `triggers` occur in the text (when it has them).
    """

    kind: str
    pattern: re.Pattern
    gate: str = ""  # single characters: `in` is a memchr, ten times cheaper than a trigger
    triggers: tuple[str, ...] = ()
    priority: int = 50
    lower: bool = False
    check: Callable | None = None


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
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{3,}")


def _is_placeholder(value: str) -> bool:
    """A value that says it is not a real secret: a literal, a placeholder, a reference or a
    template (`%(password)s`, `{token}`), or a NAME in capitals (`PASSWORD`, `OPENAI_API_KEY`)."""
    v = value.strip().rstrip(".,;:")
    low = v.lower()
    if not v or low in _LITERALS or len(set(low)) <= 2:
        return True
    if low.startswith(_REFERENCE_START) or "[redacted:" in low or "%(" in v or "%s" in v or "${" in v or "{" in v:
        return True
    if any(part in low for part in _PLACEHOLDER_PARTS):
        return True
    return bool(_CAPITALS.fullmatch(v))


def _looks_random(value: str) -> bool:
    """A bare value in code: ≥ 8 characters, letters and digits, not a name or an expression."""
    if len(value) < 8 or _is_placeholder(value):
        return False
    if any(c in value for c in "()[]{}") or _DOTTED_NAME.fullmatch(value) or len(_CAMEL_WORD.findall(value)) >= 2:
        return False  # an expression, a dotted name, a type such as `PKCS7PrivateKeyTypes`
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _token_like(value: str) -> bool:
    """A machine-made key: ≥ 16 characters without spaces, and mixed case with digits or hex."""
    if len(value) < 16 or _is_placeholder(value) or any(c.isspace() or c in "()[]" for c in value):
        return False
    if _DOTTED_NAME.fullmatch(value):
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


# --- generic assignments: `name = value`, `"name": "value"`, `--name value` ---------

_VALUE = r"""(?:
        \\"(?P<edq>[^"\\\n]{1,1000})\\"                  # JSON inside a JSON string: \"password\": \"…\"
      | "(?P<dq>(?:[^"\\\n]|\\.){1,1000})"
      | '(?P<sq>(?:[^'\\\n]|\\.){1,1000})'
      | (?P<bare>[^\s"'`,;&)\]}]{1,1000})
    )"""
# Matched on lowercased text. The keyword must end the name; which names count is decided
# in _check_assignment (`pass`, `pwd` and `key` need a prefix such as `db_` or `api`).
_ASSIGNMENT_RE = re.compile(
    r"""
    (?P<kw>p(?:ass(?:word|wd|phrase)?|wd)|secret|token|key)
    (?![a-z0-9])
    (?P<close>\\?["'`]?\]?)                         # a JSON/YAML key's quote, a subscript's ]
    (?P<annotation>[ \t]*:[ \t]*[a-z_][\w.]*(?:\[[^\]\n]{0,40}\])?(?:[ \t]*\|[ \t]*none)?(?=[ \t]*=))?
    (?P<op>[ \t]*(?:=>|:=|==|=|:)[ \t]*)
    """ + _VALUE,
    re.VERBOSE,
)
# `--password value`, `-token value`: a flag and its argument. A separate pattern because
# "token expired" in prose must not cost a Python-level check per keyword.
_FLAG_RE = re.compile(r"-(?P<kw>p(?:ass(?:word|wd|phrase)?|wd)|secret|token|key)(?![a-z0-9])(?P<close>)(?P<op>[ \t]+)"
                      + _VALUE, re.VERBOSE)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_PASSWORD_KEYWORDS = frozenset(("password", "passwd", "passphrase", "pass", "pwd"))
_STRONG_KEY_NAMES = ("api", "secret", "access", "private", "client", "auth", "signing", "encryption", "master")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


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
    if kw in ("pass", "pwd", "key") and not stem:
        return False  # `pass`, `PWD=/home/ana`, a dict's `key`
    if kw in ("pass", "pwd") and not stem.endswith(("_", "-", ".")):
        return False  # `bypass`, `os.getcwd`
    weak_key = kw == "key" and not stem.rstrip("_.-").lower().endswith(_STRONG_KEY_NAMES)
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
                  and not _DOTTED_NAME.fullmatch(value) and (has_digit or len(value) >= 20))
    else:
        ok = _looks_random(value)
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
         triggers=("akia", "asia", "abia", "acca", "a3t"), priority=10),
    Rule("aws-secret-key", re.compile(
        r"secret_?(?:access_?key|key(?<=aws_secret_key)|key(?<=awssecretkey)|key(?<=aws_secretkey)|key(?<=awssecret_key))"
        r"[\"'`]?[ \t]*(?:=>|:=|=|:)[ \t]*[\"']?"
        r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])"),
        gate="=:", triggers=("aws_secret", "secret_access", "secretaccess"), priority=10, lower=True),
    Rule("aws-secret-key", re.compile(  # a key pair pasted together: the id, then the secret close by
        r"A(?:KIA|SIA)[A-Z0-9]{16}[^\n]{0,80}?(?<![A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        triggers=("akia", "asia"), priority=10, check=_mixed_case),
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
    Rule("jwt", re.compile(_token("eyJ", r"[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")),
         gate=".", triggers=("eyj",), priority=20),
    Rule("npm-token", re.compile(_token("npm_", r"[A-Za-z0-9]{36}" + _E)), gate="_", triggers=("npm_",), priority=10),
    Rule("pypi-token", re.compile(_token("pypi-AgE", r"[A-Za-z0-9_-]{50,}")),
         gate="-", triggers=("pypi-age",), priority=10),
    Rule("huggingface-token", re.compile(_token("hf_", r"[A-Za-z0-9]{30,}" + _E)),
         gate="_", triggers=("hf_",), priority=10, check=_mixed_case),
    Rule("url-password", re.compile(
        r"://(?<=[A-Za-z0-9]://)[^\s:/?#@'\"<>\[\]]*:"
        r"(?P<secret>[^\s/?#'\"<>\[\]]+)@"),  # up to the last @: passwords may hold a raw @
        gate="@", triggers=("://",), priority=30, check=_not_placeholder),
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
    Rule("secret-assignment", _ASSIGNMENT_RE,
         gate="=:", triggers=("pass", "pwd", "secret", "token", "key"), priority=60, lower=True,
         check=_check_assignment),
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
    if match.re is _ASSIGNMENT_RE or match.re is _FLAG_RE:
        return match.span(_value_group(match))
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

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """The merged, non-overlapping spans to replace in one pass, in order, with their kinds."""
        # U+0130 is the one character whose lowercase is two characters long; lower rules
        # need the offsets of `low` to be those of `text`.
        low = (text.replace("\u0130", "I") if "\u0130" in text else text).lower()
        markers = [m.span() for m in MARKER_RE.finditer(text)] if _MARKER_TRIGGER in low else []
        marker_ends = [end for _, end in markers]
        found, ends = [], set()
        for rule in self.rules:
            if rule.gate:  # plain loops: this runs for every rule of every block
                for char in rule.gate:
                    if char in low:
                        break
                else:
                    continue
            if rule.triggers:
                for trigger in rule.triggers:
                    if trigger in low:
                        break
                else:
                    continue
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
