"""The access line of jezero_site.accesslog, without a server: what a format may ask for and
how each text is escaped (tests/e2e/test_access_log.py checks the same with a real gunicorn)."""

import base64
from datetime import timedelta
from types import SimpleNamespace

from gunicorn.config import Config

from jezero_site.accesslog import ACCESS_LOG_FORMAT, AccessLogger, EscapedAtoms, escape


def atoms(**environ):
    logger = AccessLogger(Config())
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/p?token=t0ken", "PATH_INFO": "/p", "QUERY_STRING": "token=t0ken",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", **environ}
    response = SimpleNamespace(status="200 OK", sent=5, headers=[("Set-Cookie", "sessionid=s3cret")])
    request = SimpleNamespace(headers=[("AUTHORIZATION", environ.get("HTTP_AUTHORIZATION", ""))])
    return EscapedAtoms(logger.atoms(response, request, environ, timedelta(milliseconds=12)))


def test_every_control_character_backslash_and_quote_is_escaped():
    """No line break of any kind survives, and a quoted field cannot be closed early."""
    text = "a\nb\rc\td\x00e\x1bf\x7fg\x85h\x9bi\u2028j\u2029k\u202el\\m\"n"
    escaped = escape(text)
    assert escaped == 'a\\nb\\rc\\td\\x00e\\x1bf\\x7fg\\x85h\\x9bi\\u2028j\\u2029k\\u202el\\\\m\\"n'
    assert len(escaped.splitlines()) == 1
    assert escape("/api/v1/items/ünïcode €") == "/api/v1/items/ünïcode €"   # printable text stays as it is


def test_the_line_is_written_in_the_one_safe_format_whatever_gunicorn_is_told(capsys):
    """`--access-logformat` asking for the user name, query and referrer changes nothing."""
    config = Config()
    config.set("accesslog", "-")
    config.set("access_log_format", "%(u)s %(q)s %(f)s %(r)s")
    logger = AccessLogger(config)
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/p?token=t0ken", "PATH_INFO": "/p", "QUERY_STRING": "token=t0ken",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "HTTP_REFERER": "https://elsewhere.example/"}
    response = SimpleNamespace(status="200 OK", sent=5, headers=[])
    logger.access(response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=3))
    [line] = capsys.readouterr().out.splitlines()   # --access-logfile - : stdout
    assert line.endswith('"GET /p HTTP/1.1" 200 5 "-" 3ms') and "t0ken" not in line and "elsewhere" not in line


def test_a_format_asking_for_secrets_gets_dashes():
    """The user name of a Basic header, the query string, the raw request line (which holds
    the query), the referrer, request and response headers and environment atoms are "-",
    whatever a format asks for."""
    basic = base64.b64encode(b"alice:pw").decode()
    safe = atoms(HTTP_AUTHORIZATION=f"Basic {basic}", HTTP_REFERER="https://elsewhere.example/",
                 HTTP_USER_AGENT="curl/8")
    asked = "%(u)s|%(q)s|%(r)s|%(f)s|%({authorization}i)s|%({set-cookie}o)s|%({query_string}e)s|%(l)s"
    assert asked % safe == "-|-|-|-|-|-|-|-"
    line = ACCESS_LOG_FORMAT % safe
    assert line.startswith('127.0.0.1 - - [') and line.endswith('"GET /p HTTP/1.1" 200 5 "curl/8" 12ms')
