"""What the benchmark scripts share: Django in a child process, the child processes themselves,
percentiles, the machine and the code measured, sizes via dbstat, and Markdown tables.

Every script runs as `.venv/bin/python bench/<script>.py`, so bench/ is on `sys.path` and
`import harness` (or `import search`, for its generator) just works; importing this module puts
the repository on `sys.path` too, so `library`, `connectors` and `tests` import without Django.

Settings are read once per process, so each measurement that needs Django runs in a fresh
interpreter: the parent calls `spawn(__file__, kind, **args)`, which runs the same script as
`<script> --child <kind> --args <JSON>`; the script's `main()` starts with
`if harness.child_main(CHILDREN): return`, which calls `CHILDREN[kind](args)` and writes what it
returns as JSON for the parent to read.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / "work"           # git-ignored: data folders, raw results
JEZERO = Path(sys.executable).parent / "jezero"

if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))


def parser(doc):
    """An argument parser described by the first paragraph of a script's docstring."""
    return argparse.ArgumentParser(description=doc.split("\n\n")[0])


def logger(prefix):
    """A function that prints `prefix message` to stderr at once (progress, not the report)."""
    def log(message):
        print(f"{prefix} {message}", file=sys.stderr, flush=True)
    return log


def stamp(moment=None):
    """`2026-12-01 13:20 UTC`: the time a report or result carries."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")


# --- Django for a data folder ---------------------------------------------------------------------

def data_env(data, secret="bench"):
    """The environment that points Jezero at the data folder `data`: its configuration is
    `<data>/jezero.toml` (a missing file means defaults), warnings and worse are logged."""
    return {"JEZERO_DATA_DIR": str(data), "JEZERO_CONFIG": str(Path(data) / "jezero.toml"),
            "JEZERO_SECRET_KEY": secret, "JEZERO_LOG_LEVEL": "WARNING"}


def use_data_dir(data, secret="bench", **extra):
    """Point this process (and the commands it starts) at `data`, with `extra` variables."""
    os.environ.update(data_env(data, secret), **extra)
    os.environ.pop("JEZERO_DEBUG", None)


def setup_django(data=None, *, fresh=False, toml=None, migrate=False, secret="bench", **extra):
    """Set up Django in this process for the data folder `data` (None: the environment already
    points at one, see `use_data_dir`). `fresh` deletes and recreates the folder, `toml` is
    written as its configuration, `migrate` creates the tables. `import jezero_site` comes
    before `django.setup()`: it puts the bundled SQLite in place of the interpreter's."""
    if data is not None:
        data = Path(data)
        if fresh:
            shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True, exist_ok=True)
        if toml is not None:
            (data / "jezero.toml").write_text(toml, encoding="utf-8")
        use_data_dir(data, secret, **extra)
    import jezero_site  # noqa: F401  (swaps in the bundled SQLite first)

    os.environ["DJANGO_SETTINGS_MODULE"] = "jezero_site.settings"
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def jezero(*args, env=None):
    """Run the `jezero` command of this interpreter (with `env`, default this process's
    environment) and return its standard output; stop the benchmark if it fails."""
    out = subprocess.run([str(JEZERO), *args], capture_output=True, text=True, env=env or os.environ.copy())
    if out.returncode:
        raise SystemExit(f"jezero {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out.stdout


# --- child processes ------------------------------------------------------------------------------

def spawn(script, kind, out=None, **args):
    """Run `script --child kind --args <args as JSON>` in a fresh interpreter from the repository
    and return the JSON object it wrote (to `out`, which is kept, or to a temporary file), with
    `_seconds`, the child's wall time, added."""
    keep = out is not None
    if out is None:
        handle, out = tempfile.mkstemp(prefix=f"bench-{kind}-", suffix=".json")
        os.close(handle)
    started = time.perf_counter()
    try:
        subprocess.run([sys.executable, str(script), "--child", kind, "--args", json.dumps({**args, "out": str(out)})],
                       check=True, cwd=REPO_DIR)
        result = read_json(out)
    finally:
        if not keep:
            Path(out).unlink(missing_ok=True)
    result["_seconds"] = time.perf_counter() - started
    return result


def child_main(children):
    """In a process `spawn` started: call `children[kind](args)`, write its result to
    `args["out"]` and return True. Anywhere else: return False."""
    if sys.argv[1:2] != ["--child"]:
        return False
    kind, args = sys.argv[2], json.loads(sys.argv[4])
    out = args.pop("out")
    write_json(out, children[kind](args))
    return True


def read_json(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(path, data):
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str), encoding="utf-8")


# --- figures --------------------------------------------------------------------------------------

def pct(values, p):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def percentiles(values):
    """{p50, p95, max} of `values`, in their own unit."""
    return {"p50": pct(values, 50), "p95": pct(values, 95), "max": max(values)}


def latency_ms(samples):
    """Timings in ns → {p50, p95, max, mean} in ms, and n."""
    return {"p50": pct(samples, 50) / 1e6, "p95": pct(samples, 95) / 1e6, "max": max(samples) / 1e6,
            "mean": statistics.fmean(samples) / 1e6, "n": len(samples)}


# --- the machine, the code, the database ------------------------------------------------------------

def _first(path, prefix, parse):
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return parse(line)
    except OSError:
        pass
    return "unknown"


def machine():
    """CPU model, cores, RAM, Python, the SQLite in use (after jezero_site's swap), OS."""
    sqlite = sys.modules.get("sqlite3")
    return {
        "cpu": _first("/proc/cpuinfo", "model name", lambda line: line.split(":", 1)[1].strip()),
        "cores": os.cpu_count(),
        "ram": _first("/proc/meminfo", "MemTotal", lambda line: f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"),
        "python": platform.python_version(),
        "sqlite": sqlite.sqlite_version if sqlite else "unknown",
        "os": platform.platform(),
    }


def git_head(*folders):
    """The commit checked out, and whether `folders` (the code measured) have uncommitted
    changes: `abc1234 (library/ has uncommitted changes)`."""
    try:
        head = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--", *folders],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (f" ({' or '.join(f'{f}/' for f in folders)} has uncommitted changes)" if dirty else "")


_DBSTAT = """import json, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(json.dumps(dict(con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())))
"""


def dbstat(db_path):
    """{table or index: bytes of its pages} of a SQLite file, read in a fresh interpreter by
    the standard library's sqlite3, which has the dbstat table (the bundled SQLite that
    jezero_site swaps in does not)."""
    out = subprocess.run([sys.executable, "-I", "-c", _DBSTAT, str(db_path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


# --- the report -------------------------------------------------------------------------------------

def row(*cells):
    """One Markdown table row; an empty cell is written `| |`."""
    return "|" + "|".join(f" {cell} " if cell != "" else " " for cell in cells) + "|"


def header(*cells, align=""):
    """A Markdown table's header and separator lines; `align` has an `r` for each column to
    right-align (`---:`), anything else leaves it plain (`---`)."""
    return [row(*cells), "|" + "|".join("---:" if a == "r" else "---" for a in align.ljust(len(cells))) + "|"]


def write_report(path, text):
    Path(path).write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
