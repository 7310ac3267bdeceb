"""Search by meaning (docs/design.md "Meaning"): the fused search's best candidates re-ranked by how close
what was said is to the query's meaning.

A static embedding model packaged with Jezero (`wordllama`: its 256-dimension `l2_supercat`
weights and its tokenizer ship inside its wheel — no download, no model server, numpy only)
gives every token a vector; a text's vector is the mean of its tokens', made unit length.
When an item is written, its redacted original is cut into chunks of CHUNK_TOKENS tokens and
each chunk gets a vector (an item without an original: one vector of its record's title,
summary and questions). A search embeds the query the same way (well under a millisecond)
and an item's similarity is that of its closest chunk: the part of the session that talks
about what the query asks.

Measurement chose this form (bench/RESULTS.md "Search by meaning", bench/RESULTS-recall.md,
bench/RESULTS-meaning-variants.md): a vector of the record alone did not help, and a list of
the whole library's nearest chunks would cost a scan of every chunk per query; re-ranking
the lexical candidates by their closest chunk moved question and keyword recall@1 up at
every size, and costs reading the chunks of RERANK_DEPTH items. Meaning never adds a result
the words did not find. The model reads English (and Latin-script text) well and other scripts poorly, so a
query written mostly in another script is left to the lexical ranking (`applies`).

Tables, written only through `library.store` (which keeps them in step with the items, in
the same transaction, like the FTS indexes):

- `items_vectors` — `item_id` (= items.id), `digest` (`store.digest` of the text embedded:
  `check` sees drift, and a write that leaves that text alone skips the model) and `chunks`
  (one row of DIM signed bytes per chunk: each unit vector scaled so that its largest
  component is ±127; the scale cancels out of a cosine, which is all that is computed).
- `items_vectors_state` — one row: `model`, what made the vectors (another model needs
  `jezero reindex --only meaning`).
"""

import functools
from pathlib import Path

import numpy as np
from django.db import connections

TABLE = "items_vectors"
STATE = "items_vectors_state"
CONFIG = "l2_supercat"
DIM = 256
CHUNK_TOKENS = 256      # tokens per chunk of an original (bench/recall.py: better than the whole text, or its start)
MODEL = f"wordllama {CONFIG} {DIM}, chunks of {CHUNK_TOKENS} tokens"
RERANK_DEPTH = 50       # the fused candidates re-ranked by meaning (bench/recall.py)
SHOWN = 0.5             # `matched_in` says "meaning" from this normalised similarity up
OTHER_SCRIPT_SHARE = 0.3   # a query with more of its letters outside ASCII is not re-ranked
_BATCH = 64             # texts per call to the tokenizer


# --- the model ----------------------------------------------------------------------------

@functools.cache
def model():
    """The packaged model, loaded once per process (0.2–0.5 s), never from the network."""
    import wordllama
    from wordllama import WordLlama

    # Its own folder as the cache: the wheel keeps the tokenizer in `tokenizers/`, where only
    # the cache lookup finds it (without it, `load` would try to download the file).
    loaded = WordLlama.load(config=CONFIG, dim=DIM, cache_dir=Path(wordllama.__file__).parent,
                            disable_download=True)
    loaded.tokenizer.no_padding()
    return loaded


def _token_ids(texts):
    encoded = model().tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return [np.asarray(one.ids, dtype=np.int64) for one in encoded]


def _unit(rows):
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def embed(text):
    """The unit float32 vector of a short text (zeros when the model knows none of it)."""
    ids = _token_ids([text or ""])[0]
    if not len(ids):
        return np.zeros(DIM, dtype=np.float32)
    return _unit(model().embedding[ids].mean(axis=0, keepdims=True))[0]


def chunk_vectors(texts):
    """For each text, its chunks' unit vectors (n × DIM float32; n = 0 for an empty text)."""
    table = model().embedding
    out = []
    for start in range(0, len(texts), _BATCH):
        for ids in _token_ids(texts[start:start + _BATCH]):
            if not len(ids):
                out.append(np.zeros((0, DIM), dtype=np.float32))
                continue
            starts = np.arange(0, len(ids), CHUNK_TOKENS)
            sums = np.add.reduceat(table[ids], starts, axis=0)
            out.append(_unit((sums / np.diff(np.append(starts, len(ids)))[:, None]).astype(np.float32)))
    return out


def text_of(item):
    """What an item's vectors are made from: its redacted original, or (without one) its
    record's title, summary and questions."""
    if (item.original or "").strip():
        return item.original
    return "\n".join(part for part in (item.title or "", item.summary or "", *(item.questions or [])) if part)


def to_blob(vectors):
    """Chunks as signed bytes, each scaled to ±127 at its largest component."""
    if not len(vectors):
        return b""
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    scaled = np.divide(vectors, peak, out=np.zeros_like(vectors), where=peak > 0) * 127.0
    return np.rint(scaled).astype(np.int8).tobytes()


def applies(query):
    """Whether the model can read this query: at most OTHER_SCRIPT_SHARE of its letters are
    outside ASCII (bench/recall.py: re-ranking questions in Chinese, Japanese or Russian by
    this model lost more than it found)."""
    letters = [char for char in query if char.isalpha()]
    return bool(letters) and sum(ord(char) > 127 for char in letters) <= OTHER_SCRIPT_SHARE * len(letters)


# --- the tables (written only through library.store) -----------------------------------------

def create(cursor):
    """Create the tables if missing (idempotent)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (item_id INTEGER PRIMARY KEY, digest TEXT NOT NULL,"
                   f" chunks BLOB NOT NULL)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL)")
    cursor.execute(f"INSERT OR IGNORE INTO {STATE} (id, model) VALUES (1, %s)", [MODEL])


def drop(cursor):
    cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cursor.execute(f"DROP TABLE IF EXISTS {STATE}")


def exists(cursor):
    cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (%s, %s)", [TABLE, STATE])
    return cursor.fetchone()[0] == 2


def clear(cursor):
    cursor.execute(f"DELETE FROM {TABLE}")
    cursor.execute(f"UPDATE {STATE} SET model = %s WHERE id = 1", [MODEL])


def digests(cursor, ids):
    """{item id: digest} of the vectors these items have."""
    marks = ", ".join("%s" for _ in ids)
    cursor.execute(f"SELECT item_id, digest FROM {TABLE} WHERE item_id IN ({marks})", list(ids))
    return dict(cursor.fetchall())


def put(cursor, rows):
    """Write the vectors of [(item id, digest, text)], replacing any they had."""
    if not rows:
        return
    vectors = chunk_vectors([text for _id, _digest, text in rows])
    cursor.executemany(f"INSERT OR REPLACE INTO {TABLE} (item_id, digest, chunks) VALUES (%s, %s, %s)",
                       [(item_id, digest, to_blob(chunks))
                        for (item_id, digest, _text), chunks in zip(rows, vectors, strict=True)])


def forget(cursor, ids):
    """Remove the vectors of these item ids."""
    if ids and exists(cursor):
        marks = ", ".join("%s" for _ in ids)
        cursor.execute(f"DELETE FROM {TABLE} WHERE item_id IN ({marks})", list(ids))


def recorded_model(cursor):
    cursor.execute(f"SELECT model FROM {STATE} WHERE id = 1")
    row = cursor.fetchone()
    return row[0] if row else None


def index_rows(cursor):
    """(item id, digest) of every item's vectors, by id (for `store.check`)."""
    cursor.execute(f"SELECT item_id, digest FROM {TABLE} ORDER BY item_id")
    return iter(cursor.fetchone, None)


# --- the read side ---------------------------------------------------------------------------

def similarities(query, ids, using="default"):
    """{item id: cosine of the query's vector with the item's closest chunk} for those of
    `ids` that have vectors ({} when the query has no word the model knows)."""
    vector = embed(query)
    if not vector.any() or not ids:
        return {}
    marks = ", ".join("%s" for _ in ids)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT item_id, chunks FROM {TABLE} WHERE item_id IN ({marks})", list(ids))
        rows = [(item_id, blob) for item_id, blob in cursor.fetchall() if blob]
    if not rows:
        return {}
    # One pass each over the chunks as stored: the dot products, then the norms (the bytes'
    # scale cancels out), then each item's best, its chunks being contiguous.
    chunks = np.frombuffer(b"".join(blob for _id, blob in rows), dtype=np.int8).reshape(-1, DIM).astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", chunks, chunks))
    cosines = np.divide(chunks @ vector, norms, out=np.zeros(len(chunks), dtype=np.float32), where=norms > 0)
    starts = np.cumsum([0] + [len(blob) // DIM for _id, blob in rows[:-1]])
    best = np.maximum.reduceat(cosines, starts)
    return {item_id: float(score) for (item_id, _blob), score in zip(rows, best, strict=True)}
