"""Search by meaning (issue 16): one small vector per item, the fused search's third list.

A static embedding model packaged with Jezero (`wordllama`, its 256-dimension `l2_supercat`
weights and tokenizer ship inside its wheel: no download, no model server, numpy only) turns
an item's record text — title, summary, questions — into a unit vector once, when the item
is written; a search turns the query into one the same way (microseconds) and ranks items by
cosine similarity. The vectors are a derived index like the FTS tables, kept in step by
`library.store` in the transaction that writes the items, and this module is the only code
that writes them:

- `items_vectors` — `item_id` (= items.id), `digest` (the record digest of the text it was
  made from: `store.record_digest`, so `check` sees drift and a write that leaves the record
  alone skips the model), `seq` (when it was written, for the readers' caches) and `vector`
  (DIM float16 values, little-endian, unit length; all zero for a record with no words the
  model knows).
- `items_vectors_state` — one row: `generation`, raised by every write to the vectors (the
  next `seq`), and `model`, what made them (a different model needs `jezero reindex`).

Every process that searches keeps the vectors in memory as one float32 matrix (`Vectors`),
with each item's source and project as codes so that filters apply before the top is cut.
Before a search it reads the generation (one row): unchanged, nothing to do; otherwise it
reads only the rows written since, and reloads everything when items were deleted. What it
returns is only a preselection: `library.search` joins the candidates with `items` under
the request's filters, so a stale cache can cost a candidate, never show a hidden item.
"""

import functools
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import connections

logger = logging.getLogger(__name__)

TABLE = "items_vectors"
STATE = "items_vectors_state"
CONFIG = "l2_supercat"
DIM = 256
MODEL = f"wordllama {CONFIG} {DIM}"
_BATCH = 256            # texts per call to the model (it pads a batch to its longest text)
MAX_TEXT_CHARS = 4_000  # of an item's text: the title, summary and questions come first


# --- the model ----------------------------------------------------------------------------

@functools.cache
def model():
    """The packaged model, loaded once per process (about 0.15 s), never from the network."""
    import wordllama
    from wordllama import WordLlama

    # Its own folder as the cache: the wheel keeps the tokenizer in `tokenizers/`, where only
    # the cache lookup finds it (without it, `load` would try to download the file).
    folder = Path(wordllama.__file__).parent
    return WordLlama.load(config=CONFIG, dim=DIM, cache_dir=folder, disable_download=True)


def text_of(item):
    """What an item's vector is made from: its record's title, summary and questions."""
    parts = [item.title or "", item.summary or "", *(item.questions or [])]
    return "\n".join(part for part in parts if part)[:MAX_TEXT_CHARS]


def embed(texts):
    """Unit float32 vectors (len(texts) × DIM); a text with no known token gives zeros."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    out = np.empty((len(texts), DIM), dtype=np.float32)
    for start in range(0, len(texts), _BATCH):
        chunk = [text or " " for text in texts[start:start + _BATCH]]
        vectors = model().embed(chunk, norm=False, batch_size=_BATCH)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        vectors[(norms == 0).ravel()] = 0.0
        out[start:start + len(chunk)] = vectors
    return out


def to_blob(vector):
    return np.asarray(vector, dtype="<f2").tobytes()


def from_blobs(blobs):
    if not blobs:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f2").reshape(len(blobs), DIM).astype(np.float32)


# --- the tables (written only through library.store) -----------------------------------------

def create(cursor):
    """Create the tables if missing (idempotent)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (item_id INTEGER PRIMARY KEY, digest TEXT NOT NULL,"
                   f" seq INTEGER NOT NULL, vector BLOB NOT NULL)")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_seq ON {TABLE}(seq)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (id INTEGER PRIMARY KEY CHECK (id = 1),"
                   f" generation INTEGER NOT NULL, model TEXT NOT NULL)")
    cursor.execute(f"INSERT OR IGNORE INTO {STATE} (id, generation, model) VALUES (1, 0, %s)", [MODEL])


def drop(cursor):
    cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cursor.execute(f"DROP TABLE IF EXISTS {STATE}")


def exists(cursor):
    cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (%s, %s)", [TABLE, STATE])
    return cursor.fetchone()[0] == 2


def _bump(cursor):
    cursor.execute(f"UPDATE {STATE} SET generation = generation + 1 WHERE id = 1 RETURNING generation")
    return cursor.fetchone()[0]


def clear(cursor):
    cursor.execute(f"DELETE FROM {TABLE}")
    cursor.execute(f"UPDATE {STATE} SET generation = generation + 1, model = %s WHERE id = 1", [MODEL])


def digests(cursor, ids):
    """{item id: digest} of the vectors these items have."""
    if not exists(cursor):
        return {}
    marks = ", ".join("%s" for _ in ids)
    cursor.execute(f"SELECT item_id, digest FROM {TABLE} WHERE item_id IN ({marks})", list(ids))
    return dict(cursor.fetchall())


def put(cursor, rows):
    """Write the vectors of [(item id, record digest, text)] (replacing any they had). Nothing
    before migration 0013 made the tables."""
    if not rows or not exists(cursor):
        return
    vectors = embed([text for _id, _digest, text in rows])
    seq = _bump(cursor)
    cursor.executemany(f"INSERT OR REPLACE INTO {TABLE} (item_id, digest, seq, vector) VALUES (%s, %s, %s, %s)",
                       [(item_id, item_digest, seq, to_blob(vector))
                        for (item_id, item_digest, _text), vector in zip(rows, vectors, strict=True)])


def forget(cursor, ids):
    """Remove the vectors of these item ids."""
    if not ids or not exists(cursor):
        return
    marks = ", ".join("%s" for _ in ids)
    cursor.execute(f"DELETE FROM {TABLE} WHERE item_id IN ({marks})", list(ids))
    if cursor.rowcount:
        _bump(cursor)


def recorded_model(cursor):
    cursor.execute(f"SELECT model FROM {STATE} WHERE id = 1")
    row = cursor.fetchone()
    return row[0] if row else None


def index_rows(cursor):
    """(item id, digest) of every vector, by id (for `store.check`)."""
    cursor.execute(f"SELECT item_id, digest FROM {TABLE} ORDER BY item_id")
    return iter(cursor.fetchone, None)


# --- the readers' cache ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Snapshot:
    """What a search reads: the first `size` rows of arrays that only grow in place."""

    generation: int
    size: int
    ids: np.ndarray        # int64, item ids
    matrix: np.ndarray     # float32, size × DIM
    sources: np.ndarray    # int32 codes into `names`
    projects: np.ndarray   # int32 codes into `names`; -1 for no project
    names: dict            # name → code (sources and projects share the numbering)
    rows: dict             # item id → row


class Vectors:
    """One process's copy of the vectors (see the module's docstring). Thread-safe: a refresh
    holds a lock, searches read the snapshot they took."""

    def __init__(self):
        self._lock = threading.Lock()
        self._snapshot = None
        self._alias = None

    def current(self, using="default"):
        """The snapshot of the vectors as committed now (refreshed if the generation moved)."""
        with connections[using].cursor() as cursor:
            cursor.execute(f"SELECT generation FROM {STATE} WHERE id = 1")
            row = cursor.fetchone()
        generation = row[0] if row else 0
        snapshot = self._snapshot
        if snapshot is not None and snapshot.generation == generation and self._alias == using:
            return snapshot
        with self._lock:
            snapshot = self._snapshot
            if snapshot is None or self._alias != using or snapshot.generation != generation:
                snapshot = self._refresh(snapshot if self._alias == using else None, using)
                self._snapshot, self._alias = snapshot, using
            return snapshot

    def clear(self):
        with self._lock:
            self._snapshot = None

    def _read(self, cursor, after):
        cursor.execute(f"SELECT v.item_id, v.vector, i.source, coalesce(i.project, ''), v.seq FROM {TABLE} AS v"
                       f" JOIN items AS i ON i.id = v.item_id WHERE v.seq > %s", [after])
        return cursor.fetchall()

    def _refresh(self, old, using):
        with connections[using].cursor() as cursor:
            cursor.execute(f"SELECT generation FROM {STATE} WHERE id = 1")
            row = cursor.fetchone()
            generation = row[0] if row else 0
            if old is not None:
                changed = self._read(cursor, old.generation)
                cursor.execute(f"SELECT count(*) FROM {TABLE}")
                total = cursor.fetchone()[0]
                added = sum(1 for row in changed if row[0] not in old.rows)
                if old.size + added == total:
                    return self._merged(old, changed, generation)
            return self._merged(None, self._read(cursor, -1), generation)

    @staticmethod
    def _merged(old, changed, generation):
        """A snapshot with `changed` rows (item id, vector, source, project, seq) written into
        `old`'s arrays in place (rows a search may be reading get either vector, both valid),
        grown by copying when full."""
        if old is None:
            names, rows, size = {}, {}, 0
            capacity = max(len(changed) + len(changed) // 4, 1024)
            ids = np.zeros(capacity, dtype=np.int64)
            matrix = np.zeros((capacity, DIM), dtype=np.float32)
            sources = np.zeros(capacity, dtype=np.int32)
            projects = np.full(capacity, -1, dtype=np.int32)
        else:
            names, rows, size = dict(old.names), dict(old.rows), old.size
            ids, matrix, sources, projects = old.ids, old.matrix, old.sources, old.projects
            fresh = sum(1 for row in changed if row[0] not in rows)
            if size + fresh > len(ids):
                capacity = (size + fresh) * 2
                ids, matrix = _grown(ids, capacity), _grown(matrix, capacity)
                sources, projects = _grown(sources, capacity), _grown(projects, capacity, fill=-1)
        if not changed:
            return _Snapshot(generation, size, ids, matrix, sources, projects, names, rows)
        vectors = from_blobs([row[1] for row in changed])
        for (item_id, _blob, source, project, _seq), vector in zip(changed, vectors, strict=True):
            at = rows.get(item_id)
            if at is None:
                at = rows[item_id] = size
                size += 1
            ids[at] = item_id
            matrix[at] = vector
            sources[at] = names.setdefault(("source", source), len(names))
            projects[at] = names.setdefault(("project", project), len(names)) if project else -1
        return _Snapshot(generation, size, ids, matrix, sources, projects, names, rows)


def _grown(array, capacity, fill=0):
    out = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
    out[:len(array)] = array
    return out


VECTORS = Vectors()


def nearest(query, *, sources=None, source=None, project=None, limit, using="default"):
    """[(item id, cosine similarity)] of the `limit` items closest in meaning to `query`,
    best first (ties: higher id), among those of the given sources (a set of names, None for
    all), source and project — a preselection by the cached codes; the caller applies the
    real filters."""
    snapshot = VECTORS.current(using)
    if not snapshot.size or limit <= 0:
        return []
    vector = embed([query])[0]
    if not vector.any():
        return []
    scores = snapshot.matrix[:snapshot.size] @ vector
    mask = None
    names = snapshot.names
    if source is not None or sources is not None:
        wanted = [source] if source is not None else sorted(sources)
        codes = [names[("source", name)] for name in wanted if ("source", name) in names]
        mask = np.isin(snapshot.sources[:snapshot.size], codes)
    if project is not None:
        code = names.get(("project", project))
        kept = snapshot.projects[:snapshot.size] == (code if code is not None else -2)
        mask = kept if mask is None else mask & kept
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    count = min(limit, snapshot.size)
    top = np.argpartition(-scores, count - 1)[:count] if count < snapshot.size else np.arange(snapshot.size)
    ids = snapshot.ids[:snapshot.size]
    order = sorted(top, key=lambda at: (-scores[at], -ids[at]))
    return [(int(ids[at]), float(scores[at])) for at in order if scores[at] > -np.inf]
