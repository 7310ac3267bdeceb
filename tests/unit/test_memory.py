"""jezero_site.memory: a process that imports Jezero keeps the memory a search frees for the
next search, instead of faulting fresh pages in every time (glibc only)."""

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")

# What a search at a million items does to memory, in small: a few arrays of megabytes made,
# written and freed, again and again. Prints the page faults of the later rounds.
ROUNDS = """
import json, resource, sys, threading
import numpy as np
import jezero_site
from jezero_site import memory

def search():
    arrays = [np.ones(500_000 + 1000 * k) for k in range(6)]   # about 4 MB each
    return sum(float(a[-1]) for a in arrays)

def rounds():
    for _ in range(3):
        search()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        search()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print(json.dumps({"faults_per_search": faults / 20, "tuned": not memory.env.malloc_tuned()}))

if sys.argv[1] == "thread":   # as the server searches: in a worker thread (another malloc arena)
    worker = threading.Thread(target=rounds)
    worker.start()
    worker.join()
else:
    rounds()
"""


def _run(where="main", **env):
    clean = {name: value for name, value in os.environ.items()
             if name != "GLIBC_TUNABLES" and not name.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", ROUNDS, where], env={**clean, **env}, capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_search_reuses_the_memory_the_last_one_freed(where):
    kept = _run(where)
    assert kept["tuned"]
    # Each search writes 24 MB: 6,000 pages that glibc's defaults give back and fault in again.
    given_back = _run(where, GLIBC_TUNABLES="")
    assert not given_back["tuned"]
    assert given_back["faults_per_search"] > 3000, given_back
    assert kept["faults_per_search"] < given_back["faults_per_search"] / 20, (kept, given_back)


def test_the_operators_own_tuning_is_left_alone():
    assert not _run(MALLOC_TRIM_THRESHOLD_="131072")["tuned"]
    assert not _run(GLIBC_TUNABLES="glibc.malloc.trim_threshold=131072")["tuned"]
