"""Django settings. The environment and the TOML configuration decide everything.

Environment: `JEZERO_DATA_DIR` (default `./data`), `JEZERO_CONFIG` (default
`<data>/jezero.toml`), `JEZERO_SECRET_KEY` / `JEZERO_SECRET_KEY_FILE` (else the
`secret_key` file that `jezero init` writes), `JEZERO_DEBUG`, `JEZERO_ALLOWED_HOSTS`,
`JEZERO_LOG_LEVEL`, `JEZERO_HUEY_IMMEDIATE`, `JEZERO_MAX_UPLOAD_MB`, `JEZERO_BIND`,
`JEZERO_WORKERS`, `JEZERO_HTTPS`, `JEZERO_STATIC_ROOT`, `JEZERO_LOGIN_ATTEMPTS`, `JEZERO_LOGIN_LOCKOUT_MINUTES`,
`JEZERO_BACKUP_DIR`, `JEZERO_BACKUP_KEEP`, `JEZERO_API_RATE_PER_MINUTE`, `JEZERO_SOURCES_DIR`. Every path derives from the data folder. Logs go
to stderr, so that the CLI's stdout stays clean JSON or text.
"""

import math
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from jezero_site import config, env
from library.schema import ConfigError


def usable_cpus():
    """The cores this process may use: its CPU affinity, bounded by a cgroup's CPU quota (a
    container started with `--cpus`)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        count = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text(encoding="ascii").split()
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return count


def server_processes(cpus):
    """`jezero serve`'s default number of processes: two a core, from 2 to 8. A process runs
    about one core's worth of Python, and the kernel hashes kept-alive connections over the
    processes unevenly: with one a core, one process saturated its core while the other
    core idled (10 clients at 100,000 items, bench/RESULTS-serve.md)."""
    return max(2, min(2 * cpus, 8))

try:
    DATA_DIR = env.data_dir()
    CONFIG_PATH = env.config_path()
    JEZERO = config.load(CONFIG_PATH)
    DEBUG = env.boolean("JEZERO_DEBUG", False)
    ALLOWED_HOSTS = env.listing("JEZERO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
    _secret = env.secret("JEZERO_SECRET_KEY")
    HUEY_IMMEDIATE = env.boolean("JEZERO_HUEY_IMMEDIATE", False)
    LOG_LEVEL = env.text("JEZERO_LOG_LEVEL", "INFO").upper()
    # Behind a TLS-terminating proxy: secure cookies, HSTS, and trust its X-Forwarded-Proto.
    HTTPS = env.boolean("JEZERO_HTTPS", False)
    _static_root = env.text("JEZERO_STATIC_ROOT")
    # Failed logins before a lockout (per user name and address), and its length.
    AXES_FAILURE_LIMIT = env.integer("JEZERO_LOGIN_ATTEMPTS", 5, minimum=1, maximum=100)
    AXES_COOLOFF_TIME = env.integer("JEZERO_LOGIN_LOCKOUT_MINUTES", 15, minimum=1, maximum=10_080) / 60
    # Daily backups (off unless a folder is given) and how many to keep.
    _backup_dir = env.text("JEZERO_BACKUP_DIR")
    JEZERO_BACKUP_KEEP = env.integer("JEZERO_BACKUP_KEEP", 7, minimum=1, maximum=3650)
    # Where `jezero serve` listens and how many server processes it starts.
    JEZERO_BIND = env.text("JEZERO_BIND", "127.0.0.1:8000")
    JEZERO_WORKERS = env.integer("JEZERO_WORKERS", server_processes(usable_cpus()), minimum=1, maximum=64)
    # API and MCP requests per minute per client and server process (0: no limit).
    JEZERO_API_RATE_PER_MINUTE = env.integer("JEZERO_API_RATE_PER_MINUTE", 600, minimum=0, maximum=1_000_000)
    # Largest session upload, after decompression (docs/design.md "Device uploads": default 50 MB).
    JEZERO_MAX_UPLOAD_BYTES = env.integer("JEZERO_MAX_UPLOAD_MB", 50, minimum=1, maximum=2048) * 1_000_000
    # Where agents' folders are mounted (read-only, by the compose file): the web app offers
    # each sub-folder as a connector's path.
    JEZERO_SOURCES_DIR = Path(env.text("JEZERO_SOURCES_DIR", "/sources")).expanduser()
    # The first admin's password for `jezero init` (else a random one printed once, or with
    # `--setup-page` a one-time code for /setup/); checked by AUTH_PASSWORD_VALIDATORS.
    JEZERO_ADMIN_PASSWORD = env.secret("JEZERO_ADMIN_PASSWORD")
except (ConfigError, env.EnvError) as exc:
    raise ImproperlyConfigured(str(exc)) from None

JEZERO_BACKUP_DIR = Path(_backup_dir).expanduser() if _backup_dir else None

if not DATA_DIR.is_dir():
    raise ImproperlyConfigured(f"the data folder {DATA_DIR} does not exist: run `jezero init` "
                               "(or set JEZERO_DATA_DIR)")
SECRET_KEY_FILE = DATA_DIR / "secret_key"
# The summariser's API key typed into the Settings page (mode 0600; never in the database):
# read when the environment holds none (library.ingest.summarize.configuration).
JEZERO_SUMMARIZER_KEY_FILE = DATA_DIR / "summarizer-api-key"
if _secret is None and SECRET_KEY_FILE.is_file():
    _secret = SECRET_KEY_FILE.read_text(encoding="utf-8").strip() or None
if _secret is None:
    raise ImproperlyConfigured(
        f"no secret key: run `jezero init` (writes {SECRET_KEY_FILE}) "
        "or set JEZERO_SECRET_KEY / JEZERO_SECRET_KEY_FILE"
    )
SECRET_KEY = _secret

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "huey.contrib.djhuey",
    "axes",
    "ninja",  # the API docs page: its template and Swagger UI's files served from here, not from a CDN
    "library",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "jezero_site.middleware.ContentSecurityPolicy",
    "jezero_site.middleware.FirstAdminSetup",  # to /setup/ while the first admin is still to be made
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses while locked out; counts failures
    "django.contrib.auth.backends.ModelBackend",
]
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_IPWARE_PROXY_COUNT = 1 if HTTPS else 0
# Fields whose values axes masks in the failed attempts it stores (the setup page's code and passwords too).
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "code", "password_again"]

ROOT_URLCONF = "jezero_site.urls"
WSGI_APPLICATION = "jezero_site.wsgi.application"
ASGI_APPLICATION = "jezero_site.asgi.application"

_BASE_DIR = Path(__file__).resolve().parent.parent
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [_BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite in WAL mode: readers never wait for the worker's writes. IMMEDIATE transactions take
# the write lock up front, so concurrent writers queue on the busy timeout instead of failing
# with "database is locked" when a deferred transaction tries to upgrade its lock.
DATABASES = {
    "default": {
        "ENGINE": "jezero_site.db",  # Django's sqlite3 backend + a lock around connect/close
        "CONN_MAX_AGE": 300,  # keep each thread's connection: fewer opens and closes
        "CONN_HEALTH_CHECKS": True,
        "NAME": DATA_DIR / "jezero.sqlite3",
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            # mmap: reads of a large index skip the page cache copy (about -14 % per query at 100k
            # items, bench/RESULTS.md). secure_delete: deleted rows are overwritten with zeros, so
            # that forgotten text does not stay in the file's free pages (library.forget).
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=1073741824; "
                            "PRAGMA secure_delete=ON",
        },
        # The tests' database: SQLite in memory, as Django gives its own sqlite3 engine. Said here
        # because pytest-django (under pytest-xdist) renames the test database of any other engine
        # to "test_<NAME>_gw0", a path no worker can open.
        "TEST": {"NAME": ":memory:"},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

HUEY = {
    "huey_class": "huey.SqliteHuey",
    "name": "jezero",
    "filename": str(DATA_DIR / "huey.sqlite3"),
    "immediate": HUEY_IMMEDIATE,
    "consumer": {"workers": 2, "worker_type": "thread"},
}

# Django's four and ours: every password a person sets (`jezero init`, /setup/, the admin's forms) passes them.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # Jezero's own: no user name, "jezero" or common word with only digits (a year) added.
    {"NAME": "jezero_site.passwords.GuessablePasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# `jezero init` collects static files here (the container image collects them at build time,
# JEZERO_STATIC_ROOT=/app/staticfiles); whitenoise serves them.
STATIC_ROOT = Path(_static_root) if _static_root else DATA_DIR / "static"
JEZERO_STATIC_ROOT_FROM_ENV = bool(_static_root)
STATICFILES_DIRS = [_BASE_DIR / "static"]

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# Security headers. The content security policy allows only this site's own files: no inline
# scripts or styles (htmx is configured not to add any), no framing.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 31_536_000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = False
    CSRF_TRUSTED_ORIGINS = [f"https://{host.lstrip('.')}" for host in ALLOWED_HOSTS if host != "*"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    # Given a handler here, Huey's consumer does not add its own (which would log twice).
    "loggers": {"huey": {"handlers": ["stderr"], "level": LOG_LEVEL, "propagate": False}},
}
