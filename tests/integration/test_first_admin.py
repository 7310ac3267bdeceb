"""The first admin from the browser (`/setup/`): a one-time code printed by `jezero init
--setup-page`, stored only hashed, locked out like a password after repeated wrong tries, and
gone the moment an admin exists; while it is pending every page leads to it."""

import pytest
from axes.models import AccessAttempt

from library.access import first_admin
from library.errors import BadInput

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "slate-harbour-quince-42"


@pytest.fixture
def code(settings, tmp_path):
    """A pending setup code, issued into a data folder of this test's own."""
    settings.DATA_DIR = tmp_path
    return first_admin.issue_code()


def form(code, username="maria", password=GOOD_PASSWORD, again=None):
    return {"code": code, "username": username, "password": password,
            "password_again": password if again is None else again}


def superusers(django_user_model):
    return list(django_user_model.objects.filter(is_superuser=True).values_list("username", flat=True))


def test_the_code_is_stored_only_as_a_hash_readable_by_its_owner(code, settings):
    stored = first_admin.codes_path()
    assert oct(stored.stat().st_mode & 0o777) == "0o600"
    text = stored.read_text()
    assert code not in text and code.replace("-", "") not in text
    assert len(code) == 11 and code[5] == "-" and set(code.replace("-", "")) <= set(first_admin.ALPHABET)


def test_every_code_printed_works_until_an_admin_exists(code):
    """A web and a worker container both run init: each printed code is accepted."""
    second = first_admin.issue_code()
    assert first_admin.code_matches(code) and first_admin.code_matches(second)
    assert first_admin.code_matches(second.lower().replace("-", " "))  # as typed, in any case
    assert not first_admin.code_matches("ABCDE-FGHJK")


def test_every_page_sends_the_browser_to_setup_while_no_admin_exists(client, code):
    for path in ("/", "/timeline/", "/login/", "/sources/", "/admin/"):
        response = client.get(path)
        assert (response.status_code, response["Location"]) == (302, "/setup/"), path
    assert client.get("/health").status_code == 200
    assert client.get("/api/v1/timeline").status_code == 401  # a token's answer, not a redirect
    page = client.get("/setup/")
    assert page.status_code == 200
    assert 'name="code"' in page.content.decode() and page["Cache-Control"].startswith("max-age=0")


def test_the_setup_page_makes_the_admin_logs_them_in_and_then_disappears(client, code, django_user_model):
    response = client.post("/setup/", form(code))
    assert (response.status_code, response["Location"]) == (302, "/")
    assert superusers(django_user_model) == ["maria"]
    home = client.get("/")
    assert home.status_code == 200 and "Log out maria" in home.content.decode()
    assert not first_admin.codes_path().exists()
    assert client.get("/setup/").status_code == 404
    assert client.post("/setup/", form(code, username="eve")).status_code == 404
    client.logout()
    assert client.get("/setup/").status_code == 404
    assert client.get("/")["Location"].startswith("/login/")  # pages ask for a login again, not for setup
    assert superusers(django_user_model) == ["maria"]


def test_a_refused_password_is_explained_beside_its_field_and_nothing_is_made(client, code, django_user_model):
    response = client.post("/setup/", form(code, password="maria"))
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="password-errors"' in page and "too short" in page and "too similar to the username" in page
    assert f'value="{code}"' in page  # the right code is kept; the passwords are not sent back
    assert "maria" in page and page.count('type="password"') == 2 and 'value="maria"' in page
    assert superusers(django_user_model) == []
    mismatch = client.post("/setup/", form(code, again="something-else-entirely")).content.decode()
    assert 'id="password_again-errors"' in mismatch and "The two passwords differ." in mismatch
    assert superusers(django_user_model) == []
    assert client.post("/setup/", form(code, username="not a name!")).status_code == 400
    assert client.post("/setup/", form(code)).status_code == 302  # the code still works after mistakes


def test_wrong_codes_lock_the_page_like_wrong_passwords(client, code, django_user_model, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        wrong = client.post("/setup/", form("ABCDE-FGHJK"))
        assert wrong.status_code == 400 and "not a setup code" in wrong.content.decode()
    last = client.post("/setup/", form("ABCDE-FGHJK"))
    assert last.status_code == 429 and "Too many wrong setup codes" in last.content.decode()
    locked = client.post("/setup/", form(code))
    assert locked.status_code == 429 and "Too many wrong setup codes" in locked.content.decode()
    assert superusers(django_user_model) == []
    # What axes keeps of the attempts holds neither the typed code nor the password.
    kept = " ".join(AccessAttempt.objects.values_list("post_data", flat=True))
    assert "ABCDE" not in kept and GOOD_PASSWORD not in kept and code not in kept


def test_a_wrong_code_says_nothing_about_the_name_or_password(client, code, django_user_model):
    page = client.post("/setup/", form("ABCDE-FGHJK", password="x")).content.decode()
    assert 'id="code-errors"' in page and 'id="password-errors"' not in page
    assert superusers(django_user_model) == []


def test_the_code_stops_working_once_an_admin_exists_by_any_route(client, code, django_user_model):
    django_user_model.objects.create_superuser("ana", password=GOOD_PASSWORD)
    assert not first_admin.code_matches(code)
    assert client.get("/setup/").status_code == 404
    assert not first_admin.codes_path().exists()  # the stale file is removed on the next look
    assert client.get("/")["Location"].startswith("/login/")


def test_without_a_pending_code_there_is_no_setup_page(client, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    assert client.get("/setup/").status_code == 404
    assert client.get("/")["Location"].startswith("/login/")


def test_the_first_admin_passes_every_configured_validator_with_its_name(code, django_user_model):
    with pytest.raises(BadInput) as refused:
        first_admin.create_admin("margaret", "margaret1")
    assert "too similar to the username" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(BadInput, match="entirely numeric"):
        first_admin.create_admin("margaret", "40917365820")
    assert superusers(django_user_model) == []
    assert first_admin.code_matches(code)  # a refused admin leaves the code valid
    first_admin.create_admin("margaret", GOOD_PASSWORD)
    with pytest.raises(first_admin.AdminExists):
        first_admin.create_admin("second", GOOD_PASSWORD)
    assert superusers(django_user_model) == ["margaret"]
