"""The summariser's effective configuration, and the one place that changes and tests it
(docs/design.md "The summariser", "The web app", "Configuration as data").

Three layers, key by key: the schema's default, then jezero.toml's `[summarizer]` table (read
when a process starts: `settings.JEZERO["summarizer"]`), then the values staff set in the
web app (Settings) or with `jezero summarizer set` — `SummarizerSetting` rows, read at every
call, so a running worker uses a change at its next run without a restart. A key the
database does not set stays as the file says; clearing one puts the file's value back.
Every value is checked by the loader's own code (`library.schema.check_summarizer`).

Two keys stay file-only, on purpose: `command` (a command line to run — from a web form it
would be remote code execution for anyone holding a staff session) and `api_key_env` (which
environment variable to send as the API key — from a web form, with `base_url`, it could send
any secret of the process's environment, the Django secret key or a mail password, to
any server).

The API key typed into the page is never stored in the database: it is written to a file in
the data folder (`settings.JEZERO_SUMMARIZER_KEY_FILE`, mode 0600, atomically) and read only
when the environment holds no key (`summarize.api_key_source`). Neither it nor any part of it
but its last four characters is ever logged, shown or returned.

Every reader — the pipeline, the worker's jobs, re-summarising, the CLI, the pages — takes
the configuration from `effective()` and builds the summariser with `build()`, never from
`settings.JEZERO["summarizer"]`.
"""

import contextlib
import logging
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from library.errors import BadInput, InvalidSettings, NotConfigured, SummarizerTestFailed
from library.ingest.summarize import SummaryError, SummaryRequest, api_key_source, get_summarizer, key_variable
from library.models import SummarizerSetting
from library.schema import SUMMARIZER_KEYS, ConfigError, _check_value, check_summarizer, text_values

logger = logging.getLogger(__name__)

KEYS = {key.name: key for key in SUMMARIZER_KEYS}
FILE_ONLY = {
    "command": "a command line to run is set in jezero.toml only (from the web it would let a staff "
               "session run any program)",
    "api_key_env": "which environment variable holds the key is set in jezero.toml only (from the web it "
                   "could send any of the server's secrets to base_url)",
}
EDITABLE = tuple(name for name in KEYS if name not in FILE_ONLY)
DEFAULT, FILE, DATABASE = "default", "file", "database"
ORIGIN_LABELS = {DEFAULT: "default", FILE: "jezero.toml", DATABASE: "set here"}
API_PROVIDERS = ("anthropic", "openai")
NEEDS_MODEL = ("anthropic", "openai", "command")
KEY_RE = re.compile(r"^[\x21-\x7e]{8,1000}$")   # one line of printable ASCII, no spaces
DEFAULT_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
TAIL_FROM = 16   # a key this long or longer shows its last four characters; a shorter one, none


def _file():
    return settings.JEZERO["summarizer"]


def _origin_in_file(name, value):
    # The file's table arrives with every default filled in; a value that differs from the
    # default is the file's. (One the file sets to the default reads as the default: it is.)
    return FILE if value != KEYS[name].default else DEFAULT


@dataclass(frozen=True)
class Value:
    """One key as in use: its value, where it comes from (`origin`: default, file, database),
    the value set here (None when not) and what the layer below would give."""

    name: str
    value: object
    origin: str
    stored: object = None
    below: object = None
    below_origin: str = DEFAULT

    @property
    def editable(self):
        return self.name not in FILE_ONLY

    @property
    def origin_label(self):
        return ORIGIN_LABELS[self.origin]


@dataclass(frozen=True)
class Effective:
    """The configuration in use (`config`, every key filled), each key's `Value`, and what
    is wrong: database values ignored because they no longer fit the schema, and keys the
    provider needs but does not have (`problems`: key → message)."""

    config: dict
    values: dict
    problems: dict = field(default_factory=dict)


def _rules(config):
    """What the chosen provider needs and lacks: {key: what is wrong}."""
    problems = {}
    provider = config.get("provider") or "extractive"
    if provider in NEEDS_MODEL and not (config.get("model") or "").strip():
        problems["model"] = f"required for provider {provider}"
    if provider == "command" and not config.get("command"):
        problems["provider"] = ("command runs the command line of jezero.toml's [summarizer] command, which is "
                                "not set: set it in the file first (it is not editable here)")
    return problems


def describe():
    """The `Effective` configuration: file, then the database's values over it. A stored
    value that no longer fits the schema (after an upgrade, say) is ignored and reported.
    One query."""
    file = _file()
    stored = {row.key: row.value for row in SummarizerSetting.objects.all()}
    config, problems, used = dict(file), {}, {}
    for name, value in stored.items():
        key = KEYS.get(name)
        if key is None or name in FILE_ONLY:
            problems[name] = "cannot be set here; ignored (jezero summarizer unset " + name + ")"
            continue
        try:
            config[name] = _check_value(f"summarizer.{name}", key, value)
            used[name] = config[name]
        except ConfigError as exc:
            problems[name] = f"{exc}; the stored value is ignored"
    values = {}
    for name in KEYS:
        below_origin = _origin_in_file(name, file[name])
        if name in used:
            values[name] = Value(name, used[name], DATABASE, used[name], file[name], below_origin)
        else:
            values[name] = Value(name, file[name], below_origin, None, KEYS[name].default, DEFAULT)
    for name, message in _rules(config).items():
        problems.setdefault(name, message)
    return Effective(config, values, problems)


def effective():
    """The `[summarizer]` configuration in use: a dict with every key, as jezero.toml's table
    is after loading. One query; read it anew for each run."""
    return describe().config


def key_path():
    return Path(settings.JEZERO_SUMMARIZER_KEY_FILE)


def build(config=None, **options):
    """The summariser of the effective configuration (or `config`), with the key typed into
    the Settings page as the fallback for the environment's. `options` go to
    `get_summarizer` (`max_attempts=1` for a test). Raises NotConfigured saying what to set.
    A context manager: close it (`with build() as summarizer:`)."""
    return get_summarizer(effective() if config is None else config, key_file=key_path(), **options)


def check():
    """Raise NotConfigured (its message says what to set) when the summariser cannot be built;
    builds it and closes it again, with no model call."""
    with build():
        pass


# --- changing the values set here -------------------------------------------------------------

def _typed(values):
    return text_values(KEYS, values, refused=FILE_ONLY)


def _plan(values, replace):
    """The values to keep set here after the change, and those set here now; raises
    InvalidSettings with every key at fault."""
    typed, problems = _typed(values)
    stored = {row.key: row.value for row in SummarizerSetting.objects.all()}
    wanted = {} if replace else {k: v for k, v in stored.items() if k in KEYS and k not in FILE_ONLY}
    for name, value in typed.items():
        if value is None:
            wanted.pop(name, None)
        else:
            wanted[name] = value
    merged = {**_file(), **wanted}
    _config, faults = check_summarizer(merged)
    for name, message in {**faults, **_rules(merged)}.items():
        problems.setdefault(name, message)
    if problems:
        raise InvalidSettings(problems)
    return wanted, stored


def change(values, *, replace=False):
    """Set summariser keys here from `values` ({key: text from a form or the command line,
    or a typed value}); an empty value clears the key back to the file's (or the default).
    With `replace`, `values` is the whole set (a submitted form): keys it leaves empty or out
    are cleared. The result, laid over jezero.toml's table, must pass the loader's checks and
    give the provider what it needs (a model; for `command`, the file's command line).

    Returns the new effective configuration. Raises InvalidSettings — every key at fault,
    nothing changed. Idempotent."""
    with transaction.atomic():
        wanted, stored = _plan(values, replace)
        now = timezone.now()
        SummarizerSetting.objects.exclude(key__in=list(wanted)).delete()
        for name, value in wanted.items():
            if stored.get(name, ...) != value:
                SummarizerSetting.objects.update_or_create(key=name, defaults={"value": value, "updated_at": now})
    changed = sorted(k for k in set(wanted) | set(stored) if wanted.get(k, ...) != stored.get(k, ...))
    if changed:
        logger.info("summarizer settings changed keys=%s", ",".join(changed))
    return effective()


def save(values, *, api_key="", replace=True):
    """The Settings form: `change(values, replace=…)` and, when `api_key` is not empty,
    `save_key(api_key)` — both or neither. Raises InvalidSettings naming every key at fault
    (`api_key` among them) before anything is changed. Returns the effective configuration."""
    problems = {}
    if (api_key or "").strip():
        try:
            _checked_key(api_key)
        except BadInput as exc:
            problems["api_key"] = str(exc)
    try:
        _plan(values, replace)
    except InvalidSettings as exc:
        problems = {**exc.problems, **problems}
    if problems:
        raise InvalidSettings(problems)
    config = change(values, replace=replace)
    if (api_key or "").strip():
        save_key(api_key)
    return config


def unset(names):
    """Clear keys set here back to the file's value (or the default). Returns the names that
    were set here. Raises InvalidSettings, changing nothing, for a name that is not a key or
    when what is left would not work (a provider left without its model); a key not set here
    is no error (idempotent)."""
    problems = {name: f"unknown key (allowed: {', '.join(EDITABLE)})" for name in names
                if name not in KEYS and name not in FILE_ONLY}
    if problems:
        raise InvalidSettings(problems)
    with transaction.atomic():
        found = sorted(SummarizerSetting.objects.filter(key__in=list(names)).values_list("key", flat=True))
        if found:
            _plan({name: None for name in found}, replace=False)
            SummarizerSetting.objects.filter(key__in=found).delete()
    if found:
        logger.info("summarizer settings cleared keys=%s", ",".join(found))
    return found


# --- the API key typed into the page ------------------------------------------------------------

@dataclass(frozen=True)
class KeyStatus:
    """Where the provider's API key comes from, never the key: `needed` (an API provider),
    the environment `variable` tried first, `origin` (env, env_file, file, or None: no key),
    whether a key is saved here (`saved`) and its last four characters (`tail`, "" when it is
    short), and whether the environment's key wins over the saved one (`shadowed`)."""

    needed: bool
    variable: str | None
    origin: str | None
    saved: bool
    tail: str = ""
    shadowed: bool = False
    error: str = ""


def _saved_key():
    try:
        return key_path().read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotConfigured(f"the saved API key ({key_path()}) cannot be read: {exc.strerror}") from None


def key_status(config=None, *, env=os.environ):
    config = effective() if config is None else config
    provider = config.get("provider") or "extractive"
    error = ""
    try:
        saved = _saved_key()
    except NotConfigured as exc:
        saved, error = None, str(exc)
    tail = saved[-4:] if saved and len(saved) >= TAIL_FROM else ""
    if provider not in API_PROVIDERS:
        return KeyStatus(False, None, None, saved is not None, tail, error=error)
    try:
        origin, _value = api_key_source(provider, config, env, key_path())
    except NotConfigured as exc:
        origin, error = None, str(exc)
    return KeyStatus(True, key_variable(provider, config), origin, saved is not None, tail,
                     shadowed=saved is not None and origin in ("env", "env_file"), error=error)


def _checked_key(text):
    key = (text or "").strip()
    if not key:
        raise BadInput("the API key is empty")
    if not KEY_RE.match(key):
        raise BadInput("an API key is one line of 8 to 1,000 printable characters without spaces; "
                       "this is not one (nothing was saved)")
    return key


def save_key(text):
    """Write the API key `text` to the data folder's key file: mode 0600, atomically (a
    temporary file beside it, synced, then renamed over it), replacing any saved before.
    Returns the new KeyStatus. Raises BadInput, saving nothing, for something that is not a
    key. The key is never logged."""
    key = _checked_key(text)
    path = key_path()
    handle, temporary = tempfile.mkstemp(prefix=".summarizer-api-key.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(key + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    logger.info("summarizer api key saved path=%s", path)
    return key_status()


def remove_key():
    """Delete the saved API key; returns whether there was one. Idempotent."""
    try:
        key_path().unlink()
    except FileNotFoundError:
        return False
    logger.info("summarizer api key removed path=%s", key_path())
    return True


# --- testing it ---------------------------------------------------------------------------------

SAMPLE_BLOCKS = (
    ("user", "The date test in tests/test_calendar.py fails on the first of the month; fix it."),
    ("assistant", "The test built 'tomorrow' as day + 1, which breaks at a month's end. I changed it to "
                  "date.today() + timedelta(days=1) and `pytest tests/test_calendar.py` passes: 12 passed."),
)
SAMPLE = SummaryRequest(
    document="\n\n".join(f"{role}: {text}" for role, text in SAMPLE_BLOCKS),
    title_hint="Fix the month-end date test",
    context="source=jezero-settings-test (a fixed sample, not from the library)",
    blocks=SAMPLE_BLOCKS,
)


@dataclass(frozen=True)
class TestResult:
    """What the test call returned: who wrote it, the record, its cost and how long it took."""

    __test__ = False   # not a pytest test class, whatever its name

    provider: str
    model: str
    base_url: str
    summarizer: str
    seconds: float
    input_tokens: int
    output_tokens: int
    record: dict

    def as_dict(self):
        return asdict(self)


def explain(error, config):
    """A failed test call in plain words: what the provider said and what to check."""
    text = str(error)
    provider = config.get("provider")
    where = config.get("base_url") or DEFAULT_URLS.get(provider, "the provider's API")
    status = re.search(r"HTTP (\d{3})", text)
    code = int(status.group(1)) if status else None
    if code == 401:
        return f"the provider refused the API key (HTTP 401): check the key ({text})"
    if code == 403:
        return f"the provider refused access (HTTP 403): the key may not be allowed this model ({text})"
    if code == 404:
        return (f"not found (HTTP 404): check the model name {config.get('model')!r} and base_url {where} (an "
                f"OpenAI-compatible server's usually ends in /v1) ({text})")
    if code == 400:
        return (f"the provider refused the request (HTTP 400): often an unknown model name"
                f"{', or a server without json_schema: try response_format json_object' if provider == 'openai' else ''}"
                f" ({text})")
    if code == 429:
        return f"rate limited or out of credit (HTTP 429): try again later ({text})"
    if code is not None and code >= 500:
        return f"the provider had an error (HTTP {code}): try again later ({text})"
    if "could not connect" in text:
        return f"could not reach {where}: check base_url and that the server is running ({text})"
    if "timed out" in text:
        return f"no answer from {where} within timeout_seconds ({config.get('timeout_seconds')} s) ({text})"
    return f"the answer could not be used: {text}"


def test():
    """Send the fixed SAMPLE through the effective configuration — the real provider code,
    one call (no retries), its timeout — and return a TestResult. Raises SummarizerTestFailed
    with the reason in plain words (no model or key, a refused key, an unreachable server, an
    unknown model, an unusable answer). Costs one model call; stores nothing."""
    config = effective()
    started = time.monotonic()
    try:
        summarizer = build(config, max_attempts=1)
    except NotConfigured as exc:
        raise SummarizerTestFailed(str(exc)) from None
    with summarizer:
        try:
            summary = summarizer.summarize(SAMPLE)
        except SummaryError as exc:
            logger.info("summarizer test failed provider=%s error=%s", config.get("provider"), exc)
            raise SummarizerTestFailed(explain(exc, config)) from None
    record = summary.record
    logger.info("summarizer test ok summarizer=%s", summary.summarizer)
    return TestResult(
        provider=config.get("provider") or "extractive", model=config.get("model") or "",
        base_url=config.get("base_url") or "", summarizer=summary.summarizer,
        seconds=round(time.monotonic() - started, 2), input_tokens=summary.input_tokens,
        output_tokens=summary.output_tokens,
        record={"title": record.title, "summary": record.summary, "questions": list(record.questions),
                "atoms": list(record.atoms), "project": record.project},
    )
