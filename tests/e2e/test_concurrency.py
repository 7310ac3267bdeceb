"""SQLite as configured (WAL, IMMEDIATE transactions, busy timeout): several processes
writing and reading one library at once get no "database is locked" errors."""

import os
import subprocess
import sys
from pathlib import Path

JEZERO = Path(sys.executable).with_name("jezero")

WRITER = """
import sys, datetime
from jezero_site.cli import main  # noqa: F401  (bundled SQLite first)
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")
django.setup()
from library.models import Item
name = sys.argv[1]
for n in range(150):
    item = Item(key=f"{name}:{n}", source=name, title=f"{name} record {n} heron",
                summary="written while others write", occurred_at=datetime.datetime.now(datetime.UTC))
    item.save()                      # one transaction per item: the worst case for locking
    if n % 10 == 0:
        item.title += " (edited)"
        item.save()
print("done", name)
"""

READER = """
from jezero_site.cli import main  # noqa: F401
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")
django.setup()
from library.search import ALL_SOURCES, search
for n in range(200):
    search("heron record", allowed_sources=ALL_SOURCES)
print("read")
"""


def test_concurrent_writers_and_a_reader_all_succeed(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env["JEZERO_DATA_DIR"] = str(tmp_path / "data")
    env["HOME"] = str(tmp_path)
    subprocess.run([str(JEZERO), "init"], env=env, check=True, capture_output=True, timeout=60)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, name], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for name in ("agent-a", "agent-b", "agent-c")]
    procs.append(subprocess.Popen([sys.executable, "-c", READER], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
    outputs = [proc.communicate(timeout=180) for proc in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err
    check = subprocess.run([str(JEZERO), "check", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout
    assert '"items": 450' in check.stdout
    mode = subprocess.run([sys.executable, "-c", "import jezero_site, sqlite3, sys; "
                           "print(sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode').fetchone()[0])",
                           str(tmp_path / "data" / "jezero.sqlite3")], capture_output=True, text=True, timeout=30)
    assert mode.stdout.strip() == "wal"
