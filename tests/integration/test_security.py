"""Security settings a person notices: a content security policy on every page, and a
lockout after repeated wrong passwords."""

import pytest

pytestmark = pytest.mark.django_db


def test_pages_carry_a_strict_content_security_policy(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ana", password="pw-123456789"))
    for path in ("/", "/login/", "/health"):
        policy = client.get(path)["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert client.get("/")["X-Frame-Options"] == "DENY"


def test_repeated_wrong_passwords_lock_the_login(client, django_user_model, settings):
    django_user_model.objects.create_user("tomas", password="the-right-password-1")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/login/", {"username": "tomas", "password": "wrong"}).status_code == 200
    assert client.post("/login/", {"username": "tomas", "password": "wrong"}).status_code == 429  # the limit
    locked = client.post("/login/", {"username": "tomas", "password": "the-right-password-1"})
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_right_password_before_the_limit_resets_the_count(client, django_user_model, settings):
    django_user_model.objects.create_user("tomas", password="the-right-password-1")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/login/", {"username": "tomas", "password": "wrong"})
    assert client.post("/login/", {"username": "tomas", "password": "the-right-password-1"}).status_code == 302
