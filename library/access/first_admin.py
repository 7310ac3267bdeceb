"""The first admin: the password rules every admin password passes, and the one-time setup
codes that let a person create the first admin from the browser (`/setup/`) when no password
was given to `jezero init`.

A setup code is 10 characters from an alphabet without look-alikes (about 49 bits), shown
once by `jezero init --setup-page` and stored only as an HMAC keyed by the secret key, one
line per code, in `<data>/setup-codes` (mode 0600). Every printed code stays valid until an
admin exists (the newest `KEEP_CODES` of them), so a web and a worker container that both
run `init` on one volume, or a restarted container, never invalidate the code a person is
reading. The moment a superuser exists, by any route, every code stops working and the file
is removed. Wrong codes count as failed logins with django-axes (per address), so they lock
out exactly like wrong passwords.
"""

import hmac
import logging
import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.crypto import salted_hmac

from library.errors import BadInput

logger = logging.getLogger(__name__)

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no I, L, O, 0, 1: read from a log, typed by hand
CODE_LENGTH = 10
KEEP_CODES = 3
# The name wrong setup codes are counted under by django-axes (with the address).
LOCKOUT_NAME = "(first-admin setup code)"
_HMAC_SALT = "jezero.first_admin.setup_code"


class AdminExists(BadInput):
    """A superuser exists already: the first admin cannot be created again."""


def codes_path():
    return settings.DATA_DIR / "setup-codes"


def admin_exists():
    return get_user_model().objects.filter(is_superuser=True).exists()


# --- Passwords and names ----------------------------------------------------------------------

def password_problems(password, username):
    """What is wrong with `password` for a user called `username` under AUTH_PASSWORD_VALIDATORS
    (UserAttributeSimilarity sees the name): a list of sentences, empty when it passes."""
    user = get_user_model()(username=username)
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        return list(exc.messages)
    return []


def password_rules():
    """The configured validators' rules, as sentences to show beside a password field."""
    return password_validation.password_validators_help_texts()


def username_problems(username):
    """What is wrong with `username` as a new user's name (the model field's own rules, taken
    names): a list of sentences, empty when it is fine."""
    users = get_user_model()
    field = users._meta.get_field(users.USERNAME_FIELD)
    try:
        field.clean(username, None)
    except ValidationError as exc:
        return list(exc.messages)
    if users.objects.filter(**{f"{users.USERNAME_FIELD}__iexact": username}).exists():
        return ["A user with that name exists."]
    return []


def create_admin(username, password):
    """Create the first superuser after checking the name and the password; returns the user.

    Raises BadInput (one line listing every problem) when either is refused, AdminExists when
    a superuser exists already (checked inside the write transaction, so two at once cannot
    both succeed). Forgets every setup code on success. Nothing is written on failure.
    """
    problems = username_problems(username) + password_problems(password, username)
    if problems:
        raise BadInput(" ".join(problems))
    users = get_user_model()
    with transaction.atomic():  # BEGIN IMMEDIATE: the check and the insert hold the write lock
        if admin_exists():
            raise AdminExists("an admin user exists already")
        user = users.objects.create_superuser(username, email="", password=password)
    forget_codes()
    logger.info("first admin created user=%s", username)
    return user


# --- Setup codes --------------------------------------------------------------------------------

def _digest(code):
    return salted_hmac(_HMAC_SALT, _normal(code), algorithm="sha256").hexdigest()


def _normal(code):
    """As typed: any case, with or without the dash or spaces."""
    return "".join(code.split()).replace("-", "").upper()


def _stored():
    try:
        return [line.strip() for line in codes_path().read_text(encoding="ascii").splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def issue_code():
    """A new setup code, shown as `XXXXX-XXXXX`; its HMAC joins the newest KEEP_CODES - 1
    stored ones (the file is written whole, mode 0600). The caller shows it once."""
    code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    lines = [*_stored()[-(KEEP_CODES - 1):], _digest(code)]
    path = codes_path()
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write("\n".join(lines) + "\n")
    partial.replace(path)
    return f"{code[:5]}-{code[5:]}"


def code_matches(code):
    """Whether `code` is a pending setup code (compared in constant time with each stored
    one). False once an admin exists, whatever was typed."""
    stored = _stored()
    if not stored or not code or admin_exists():
        return False
    given = _digest(code)
    return any([hmac.compare_digest(given, line) for line in stored])  # a list: compare with every one


def setup_pending():
    """Whether the setup page is open: codes are stored and no superuser exists. Costs a file
    check and no query in the normal case (no codes file); removes a stale file once an admin
    exists (made by `createsuperuser`, say)."""
    if not codes_path().exists():
        return False
    if admin_exists():
        forget_codes()
        return False
    return True


def forget_codes():
    codes_path().unlink(missing_ok=True)
