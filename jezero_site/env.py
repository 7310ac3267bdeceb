"""Reading the environment: the only module that looks at `os.environ`.

Strict parsers in the manner of healthchecks: a boolean is `true`/`false` (any case) or an
error naming the variable; a secret may come from `NAME` or from a file named by `NAME_FILE`
(Docker secrets). Anything unparsable raises `EnvError`, which names the variable.
"""

import os
from pathlib import Path


class EnvError(ValueError):
    """An environment variable holds a value that cannot be used."""


def text(name, default=None):
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def boolean(name, default=False):
    value = text(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise EnvError(f"{name}={value!r} is not a boolean: use true or false")


def integer(name, default, *, minimum=None, maximum=None):
    value = text(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not an integer") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise EnvError(f"{name}={number} is out of range ({minimum}–{maximum})")
    return number


def listing(name, default=()):
    value = text(name)
    if value is None:
        return list(default)
    return [part.strip() for part in value.split(",") if part.strip()]


def secret(name):
    """`NAME`, else the contents of the file named by `NAME_FILE` (stripped), else None."""
    value = text(name)
    if value is not None:
        return value
    path = text(f"{name}_FILE")
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip() or None
    except OSError as exc:
        raise EnvError(f"{name}_FILE={path!r} cannot be read: {exc.strerror}") from None


def data_dir():
    """The data folder: `JEZERO_DATA_DIR`, default `./data`, as an absolute path."""
    return Path(text("JEZERO_DATA_DIR", "data")).expanduser().resolve()


def config_path():
    """The TOML configuration: `JEZERO_CONFIG`, default `<data dir>/jezero.toml`."""
    value = text("JEZERO_CONFIG")
    return Path(value).expanduser().resolve() if value else data_dir() / "jezero.toml"


def malloc_tuned():
    """Whether the operator tuned glibc's allocator themselves (`GLIBC_TUNABLES` or a
    `MALLOC_*_` variable is set): `jezero_site.memory` then leaves it as they set it."""
    return any(name == "GLIBC_TUNABLES" or (name.startswith("MALLOC_") and name.endswith("_"))
               for name in os.environ)
