"""The bundled SQLite can deadlock when one thread opens a connection to a WAL database
while another closes one (bench/sqlite_deadlock.py reproduces it with raw connections).
Jezero's backend makes opening and closing take turns: a thread that wants to open a
connection waits while another is opening or closing one."""

import linecache
import sys
import threading

import pytest
from django.conf import settings
from django.db import connections

from jezero_site.db.base import CONNECT_LOCK
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db


def at_the_lock(thread):
    """True while `thread` stands on a `with CONNECT_LOCK:` line: waiting for the lock, since
    the test holds it. Seen from its stack, so the test need not sleep to find out."""
    frame = sys._current_frames().get(thread.ident)
    return frame is not None and linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() == (
        "with CONNECT_LOCK:")


def test_the_configured_backend_is_jezeros():
    assert settings.DATABASES["default"]["ENGINE"] == "jezero_site.db"


def test_opening_a_connection_waits_while_another_opens_or_closes():
    opened, go = threading.Event(), threading.Event()

    def open_one():
        go.wait(10)
        wrapper = connections.create_connection("default")
        wrapper.ensure_connection()
        opened.set()
        wrapper.close()

    # The thread starts before the lock is taken: a starting thread may run a finalizer of an
    # earlier test's dropped connection, which takes the lock (LockedConnection.__del__).
    thread = threading.Thread(target=open_one)
    thread.start()
    with CONNECT_LOCK:                      # as if another thread were inside connect() or close()
        go.set()
        wait_until(lambda: opened.is_set() or at_the_lock(thread), what="the thread to open or to wait")
        assert not opened.is_set()          # it waits its turn
    assert opened.wait(10)                  # and proceeds once the other is done
    thread.join(10)


def test_every_connection_closes_under_the_lock_even_when_only_dropped():
    """A connection left open when its thread ends is closed by its finalizer — under the lock."""
    from jezero_site.db.base import LockedConnection

    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    raw = wrapper.connection
    assert isinstance(raw, LockedConnection)
    closed, go = threading.Event(), threading.Event()

    def finalise():
        go.wait(10)
        raw.close()  # what __del__ does when the last reference goes
        closed.set()

    thread = threading.Thread(target=finalise)   # started outside the lock, as above
    thread.start()
    with CONNECT_LOCK:
        go.set()
        wait_until(lambda: closed.is_set() or at_the_lock(thread), what="the thread to close or to wait")
        assert not closed.is_set()          # the close waits for the lock
    assert closed.wait(10)
    thread.join(10)
