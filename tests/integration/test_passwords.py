"""The password rule of jezero_site.passwords (docs/design.md "Passwords and logins"), wherever a password is set: a user
name, "jezero" or a common password with only digits (a year) or symbols added, or only a
date, is refused — by `jezero init`'s check, the /setup/ page, the Users page, `jezero user`
and the Django admin's password form — with a sentence that says why; passphrases and the
passwords Jezero generates pass."""

import io
import secrets

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client as Browser

from library.access import first_admin
from library.models import Person

pytestmark = pytest.mark.django_db

NAME_ADDED = "This password is your user name with only digits or symbols added."
PRODUCT_ADDED = "This password is the product's name (jezero) with only digits or symbols added."
BOTH_ADDED = "This password is your user name and the product's name (jezero) with only digits or symbols added."
COMMON_ADDED = "This password is a common password with only digits or symbols added"
A_DATE = "This password is only a date or a year (digits and separators)."


@pytest.mark.parametrize("user, password, message", [
    ("admin", "admin12345", NAME_ADDED),
    ("admin", "Admin-2026!", NAME_ADDED),
    ("ana.maria", "AnaMaria1990", NAME_ADDED),
    ("maria", "Jezero2026", PRODUCT_ADDED),
    ("maria", "jEzErO_2026_!!", PRODUCT_ADDED),
    ("maria", "2026jezero2026", PRODUCT_ADDED),
    ("admin", "admin-jezero-7", BOTH_ADDED),
    ("maria", "Summer2026", COMMON_ADDED),
    ("maria", "Dragon!1987", COMMON_ADDED),
    ("maria", "password-2026", COMMON_ADDED),
    ("maria", "2026-12-31", A_DATE),
    ("maria", "31.12.1990 20:15", A_DATE),
])
def test_a_name_the_product_or_a_common_word_with_a_year_is_refused_saying_why(user, password, message):
    problems = first_admin.password_problems(password, user)
    assert any(problem.startswith(message) for problem in problems), problems


@pytest.mark.parametrize("user, password", [
    ("admin", "slate-harbour-quince-42"),
    ("admin", "correct horse battery staple"),
    ("maria", "jezero-harbour-lantern-58"),      # the product's name inside a longer passphrase
    ("maria", "Summer-harbour-2026"),             # a common word, but not alone
    ("maria", "7#2!9$4%1&8*"),                    # no letters, but not a date
])
def test_passphrases_and_random_passwords_pass(user, password):
    assert first_admin.password_problems(password, user) == []


def test_the_passwords_jezero_generates_always_pass():
    """`jezero init`, `jezero user add` without a password: secrets.token_urlsafe(12)."""
    for _ in range(300):
        password = secrets.token_urlsafe(12)
        assert first_admin.password_problems(password, "admin") == [], password


def test_the_rule_is_shown_beside_the_password_fields():
    assert any("“jezero” or a common password with only digits (a year, say)" in rule
               for rule in first_admin.password_rules())


def test_the_setup_page_refuses_the_product_name_with_a_year(client, settings, tmp_path, django_user_model):
    settings.DATA_DIR = tmp_path
    code = first_admin.issue_code()
    response = client.post("/setup/", {"code": code, "username": "maria", "password": "Jezero2026",
                                       "password_again": "Jezero2026"})
    assert response.status_code == 400 and PRODUCT_ADDED.replace("'", "&#x27;") in response.content.decode()
    assert not django_user_model.objects.exists()


def test_the_users_page_refuses_a_name_with_digits_for_a_new_and_an_old_user(people, staff, django_user_model):
    response = staff.post("/users/", {"name": "mira", "sources": "*", "password": "mira2026!!"})
    assert response.status_code == 400 and NAME_ADDED in response.content.decode()
    assert not django_user_model.objects.filter(username="mira").exists()
    response = staff.post("/users/tomas/", {"sources": "*", "password": "Tomas-1990"})
    assert response.status_code == 400 and NAME_ADDED in response.content.decode()
    people["plain"].refresh_from_db()
    assert not people["plain"].has_usable_password()


def test_jezero_user_refuses_it_on_add_and_edit(monkeypatch, django_user_model):
    monkeypatch.setattr("sys.stdin", io.StringIO("Summer2026!\n"))
    with pytest.raises(CommandError, match="common password with only digits or symbols added"):
        call_command("user", "add", "mira", "--sources", "*", "--password-stdin")
    assert not django_user_model.objects.filter(username="mira").exists()
    lena = django_user_model.objects.create_user("lena")
    Person.objects.create(user=lena, sources=["*"])
    monkeypatch.setattr("sys.stdin", io.StringIO("lena12345\n"))
    with pytest.raises(CommandError, match="your user name with only digits"):
        call_command("user", "edit", "lena", "--password-stdin")
    lena.refresh_from_db()
    assert not lena.has_usable_password()


def test_jezero_init_refuses_it_before_making_the_admin(settings, django_user_model):
    settings.JEZERO_ADMIN_PASSWORD = "admin12345"
    with pytest.raises(CommandError, match="JEZERO_ADMIN_PASSWORD is refused: " + NAME_ADDED):
        call_command("init")
    assert not django_user_model.objects.exists()


def test_the_admins_password_form_refuses_it(django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password=None)
    tomas = django_user_model.objects.create_user("tomas")
    admin = Browser()
    admin.force_login(boss)
    response = admin.post(f"/admin/auth/user/{tomas.pk}/password/",
                          {"password1": "Tomas2026", "password2": "Tomas2026", "usable_password": "true"})
    assert response.status_code == 200 and NAME_ADDED in response.content.decode()
    tomas.refresh_from_db()
    assert not tomas.has_usable_password()
