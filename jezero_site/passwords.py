"""Jezero's own password rule, beside Django's four in AUTH_PASSWORD_VALIDATORS (so it applies
wherever a password is set: `jezero init`, the /setup/ page, the Users page, `jezero user`,
the Django admin, `changepassword`).

Django's validators let through what an attacker tries first: `admin12345` for the user admin
(too far from "admin" for the similarity check), `Jezero2026`, `Summer2026!` (the common
list holds "summer", not with a year). The rule: take the password's letters, dropping every
digit and symbol wherever they are; refuse it when those letters are

- the user name (its letters), the product name "jezero", or several of these in a row
  (`admin-jezero-1`), in any case;
- one common password from Django's list (`summer`, `dragon`, `password`), when they are
  four letters or more (shorter ones are too rare a core to say the password is that word);

and refuse a password of digits and date separators only (`2026-12-31`, `31.12.1990`): a date
or a year (digits alone are the NumericPasswordValidator's). Common substitutions
(`j3z3r0`) are not undone: the rule is about what is tried first, not a cracker's rule set.
"""

import functools
import re

from django.contrib.auth.password_validation import CommonPasswordValidator
from django.core.exceptions import ValidationError

PRODUCT = "jezero"
_DATE = re.compile(r"[\d\s./:_,-]+")
_MIN_COMMON = 4


def _letters(text):
    return "".join(char for char in text.casefold() if char.isalpha())


def _repeats(core, *pieces):
    """Whether `core` is nothing but the (non-empty) `pieces`, once or more, in any order."""
    alternatives = "|".join(re.escape(piece) for piece in pieces if piece)
    return bool(alternatives) and re.fullmatch(f"(?:{alternatives})+", core) is not None


@functools.cache
def _common():
    """Django's list of 20,000 common passwords, read once per process on first use."""
    return CommonPasswordValidator().passwords


class GuessablePasswordValidator:
    """Refuses a user name, "jezero" or a common password with only digits (a year, say) or
    symbols added, and a password that is only a date (the module's docstring)."""

    def validate(self, password, user=None):
        if _DATE.fullmatch(password) and not password.isdigit():
            raise ValidationError("This password is only a date or a year (digits and separators).",
                                  code="password_is_a_date")
        core = _letters(password)
        if not core:
            return
        name = _letters(user.get_username() or "") if user is not None else ""
        if _repeats(core, name, PRODUCT):
            made_of = ("your user name" if _repeats(core, name) else "the product's name (jezero)"
                       if _repeats(core, PRODUCT) else "your user name and the product's name (jezero)")
            raise ValidationError(f"This password is {made_of} with only digits or symbols added.",
                                  code="password_is_a_name")
        if len(core) >= _MIN_COMMON and core in _common():
            raise ValidationError("This password is a common password with only digits or symbols added; a year "
                                  "or a number does not make it safe.", code="password_is_common")

    def get_help_text(self):
        return ("Your password can’t be your user name, “jezero” or a common password with only digits (a year, "
                "say) or symbols added, nor only a date.")
