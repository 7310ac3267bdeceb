"""What the benchmarks say about the machine they ran on (one implementation for all)."""

import os
import platform
import sys
from pathlib import Path


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
