"""People: the web app's users and what each may read (docs/design.md "People").

Staff users read every source. Anyone else reads the sources their allowed-source globs
name — a `Person` row, matched exactly as a client's `sources` are (`library.filters`) — and
a user without a row (one made in the Django admin, say) reads nothing. `allowed_sources`
is the one answer every page, the agent view and the API read through a browser session
ask; an item outside it does not exist for that person.

Managing people — `create`, `update`, `listing`, `get` — is here too, for the Users page and
`jezero user` alike, with the rules both follow: a name as Django's user model takes it, a
password that passes the password validators, globs as clients take them, and a person who
is not staff reads some source (none would make an account that finds nothing). Changes
apply from that person's next request: the globs and the staff flag are read on every one,
and Django ends the sessions of a deactivated user and the other sessions of a user whose
password changed.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction

from library.access.first_admin import password_problems, username_problems
from library.errors import BadInput, NotFound
from library.filters import ALL_SOURCES, parse_globs
from library.models import Person

NO_SOURCES = ("--sources: a person who is not staff and has no sources reads nothing; give them sources "
              "(e.g. 'agent-*', or '*' for all), or make them staff")


def allowed_sources(user):
    """The allowed-source globs of `user` for every read: `ALL_SOURCES` for active staff, the
    person's globs (a tuple) for anyone else logged in, () for an anonymous or inactive user
    and for a user without a `Person` row. One query for a non-staff user, none otherwise."""
    if not user.is_authenticated or not user.is_active:
        return ()
    if user.is_staff:
        return ALL_SOURCES
    globs = Person.objects.filter(user_id=user.pk).values_list("sources", flat=True).first()
    return tuple(globs or ())


@dataclass(frozen=True)
class PersonRow:
    """A user as the Users page and `jezero user list` show them."""

    name: str
    staff: bool
    active: bool
    sources: tuple            # allowed-source globs, () for none (or no Person row)
    last_login: datetime | None
    joined: datetime

    @property
    def reads_everything(self):
        return self.staff or "*" in self.sources

    def as_json(self):
        return {"name": self.name, "staff": self.staff, "active": self.active, "sources": list(self.sources),
                "last_login": self.last_login.isoformat() if self.last_login else None,
                "joined": self.joined.isoformat()}


def _person(user):
    """The user's Person row (fetched with the user by `select_related`), or None."""
    try:
        return user.person
    except Person.DoesNotExist:
        return None


def _row(user):
    person = _person(user)
    return PersonRow(name=user.get_username(), staff=user.is_staff, active=user.is_active,
                     sources=tuple(person.sources) if person else (), last_login=user.last_login,
                     joined=user.date_joined)


def listing():
    """Every user, by name, inactive ones too (one query)."""
    users = get_user_model()
    return [_row(user) for user in users.objects.select_related("person").order_by(users.USERNAME_FIELD)]


def _user(name):
    users = get_user_model()
    user = users.objects.select_related("person").filter(**{users.USERNAME_FIELD: name}).first()
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


def get(name):
    """The PersonRow of user `name`; raises NotFound."""
    return _row(_user(name))


def _check_password(password, name):
    problems = password_problems(password, name)
    if problems:
        raise BadInput("password: " + " ".join(problems))


def create(name, *, sources=(), staff=False, password=None):
    """Add a user who reads `sources` (globs, separated by commas or a list), staff or not;
    returns (PersonRow, the password generated when none was given, else None) — a generated
    password is shown once and never stored in clear. Raises BadInput — nothing made — for a
    name taken or refused by the user model, a password the validators refuse, a bad glob,
    or no sources for someone who is not staff."""
    users = get_user_model()
    if name and users.objects.filter(**{f"{users.USERNAME_FIELD}__iexact": name}).exists():
        raise BadInput(f"a user named {name!r} exists already")
    problems = username_problems(name)
    if problems:
        raise BadInput(f"name {name!r}: " + " ".join(problems))
    globs = parse_globs(sources)
    if not staff and not globs:
        raise BadInput(NO_SOURCES)
    generated = None
    if password is None:
        generated = password = secrets.token_urlsafe(12)
    _check_password(password, name)
    with transaction.atomic():
        user = users.objects.create_user(name, password=password, is_staff=staff)
        Person.objects.create(user=user, sources=globs)
    return _row(user), generated


def update(name, *, sources=None, staff=None, password=None, active=None, by=None):
    """Change what is given of a user's allowed sources, staff flag, password and whether the
    account is active (None keeps it); returns the PersonRow. `by`, the user making the change
    on the Users page, may not take their own staff flag away or deactivate themselves (they
    would lock themselves out of this page). Raises NotFound, or BadInput under the rules of
    `create` — nothing saved. Giving sources to a user without a Person row makes one."""
    user = _user(name)
    person = _person(user) or Person(user=user, sources=[])
    if sources is not None:
        person.sources = parse_globs(sources)
    if by is not None and by.pk == user.pk and (staff is False or active is False):
        raise BadInput("you cannot take away your own staff rights or deactivate yourself; ask another staff user")
    if staff is not None:
        user.is_staff = staff
    if active is not None:
        user.is_active = active
    if (sources is not None or staff is not None) and not user.is_staff and not person.sources:
        raise BadInput(NO_SOURCES)
    if password is not None:
        _check_password(password, name)
        user.set_password(password)
    with transaction.atomic():
        user.save()
        if person.pk is not None or sources is not None:
            person.save()
    user.person = person
    return _row(user)
