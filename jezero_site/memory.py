"""Keeps the memory a search frees for the next search (glibc's allocator).

A search at a million items makes arrays of a few megabytes per common term (its postings,
their parts of bm25) and one of eight per index (every item's relevance). glibc's malloc
serves such blocks from fresh `mmap`s, or from the heap and then returns the freed top of the
heap to the system as soon as it exceeds twice the largest block seen. Either way the next
search touches new pages: one page fault every 4 KB, which measured 40 % of the time spent
adding up postings at a million items (18 ns a posting against 11 with the memory kept;
docs/design.md "The postings").

`keep_freed_memory` raises both thresholds once per process: blocks up to 32 MB (glibc's
largest setting) come from the heap, and up to 128 MB freed at its top stays there. A
process keeps what its largest search used (tens of megabytes at a million items) instead
of giving it back between searches. It changes where memory comes from, never what is
computed. Left alone where the allocator is not glibc's, or when the operator tuned it
(`GLIBC_TUNABLES` or a `MALLOC_*_` variable).
"""

import ctypes

from jezero_site import env

# mallopt(3) parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 * 1024 * 1024    # the largest glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 128 * 1024 * 1024


def keep_freed_memory():
    """Raise glibc's mmap and trim thresholds for this process; whether they were set."""
    if env.malloc_tuned():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):   # not glibc (macOS has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
