"""Frozen code of migration 0013 (the item vectors of the search by meaning), version 1; a
module whose name starts with `_` is not a migration.

Never change this module: copied as it stood when the migrations were frozen (2026-12-02, at
4cb9f5a) from `library.meaning` (the model, `chunk_vectors`, `to_blob`, `text_of`, `MODEL`,
the tables) and `library.store.fill_vectors`: chunks of what was said, the form of the
vectors since 50b69ab (14 minutes after 0013 was written with one vector of the record). The
vectors it makes are recorded as made by MODEL; when today's `library.meaning` uses another
model, `jezero check` says so and `jezero reindex --only meaning` makes them anew.

It needs the packaged wordllama model (wordllama 0.4, whose wheel holds the `l2_supercat`
weights and tokenizer: nothing is downloaded) and loads it only when there are items to
embed. Should a later Jezero drop wordllama, this migration has to give way to one that
leaves the tables empty for `jezero reindex --only meaning` (as 0014 does for the postings).
"""

import json
from pathlib import Path

import numpy as np

from library.migrations._v1_indexes import digest, each_batch, progress_printer

TABLE = "items_vectors"
STATE = "items_vectors_state"
CONFIG = "l2_supercat"
DIM = 256
CHUNK_TOKENS = 256
MODEL = f"wordllama {CONFIG} {DIM}, chunks of {CHUNK_TOKENS} tokens"
LABEL = "item vectors"
_TEXTS = 64     # texts per call to the tokenizer
_ITEMS = 200    # items read and written at a time


def load_model():
    """The packaged model, never from the network (0.2–0.5 s)."""
    import wordllama
    from wordllama import WordLlama

    # Its own folder as the cache: the wheel keeps the tokenizer in `tokenizers/`, where only
    # the cache lookup finds it (without it, `load` would try to download the file).
    loaded = WordLlama.load(config=CONFIG, dim=DIM, cache_dir=Path(wordllama.__file__).parent,
                            disable_download=True)
    loaded.tokenizer.no_padding()
    return loaded


def _unit(rows):
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def chunk_vectors(model, texts):
    """For each text, its chunks' unit vectors (n × DIM float32; n = 0 for an empty text)."""
    table = model.embedding
    out = []
    for start in range(0, len(texts), _TEXTS):
        encoded = model.tokenizer.encode_batch(list(texts[start:start + _TEXTS]), add_special_tokens=False)
        for ids in (np.asarray(one.ids, dtype=np.int64) for one in encoded):
            if not len(ids):
                out.append(np.zeros((0, DIM), dtype=np.float32))
                continue
            starts = np.arange(0, len(ids), CHUNK_TOKENS)
            sums = np.add.reduceat(table[ids], starts, axis=0)
            out.append(_unit((sums / np.diff(np.append(starts, len(ids)))[:, None]).astype(np.float32)))
    return out


def to_blob(vectors):
    """Chunks as signed bytes, each scaled to ±127 at its largest component."""
    if not len(vectors):
        return b""
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    scaled = np.divide(vectors, peak, out=np.zeros_like(vectors), where=peak > 0) * 127.0
    return np.rint(scaled).astype(np.int8).tobytes()


def text_of(title, summary, questions, original):
    """What an item's vectors are made from: its original, or (without one) its record's
    title, summary and questions (`questions` as the JSON the items table holds)."""
    if (original or "").strip():
        return original
    parts = (title or "", summary or "", *(json.loads(questions) or []))
    return "\n".join(part for part in parts if part)


def create(cursor):
    """The two tables (if missing), emptied, the state naming MODEL."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (item_id INTEGER PRIMARY KEY, digest TEXT NOT NULL,"
                   f" chunks BLOB NOT NULL)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL)")
    cursor.execute(f"INSERT OR IGNORE INTO {STATE} (id, model) VALUES (1, %s)", [MODEL])
    cursor.execute(f"DELETE FROM {TABLE}")
    cursor.execute(f"UPDATE {STATE} SET model = %s WHERE id = 1", [MODEL])


def fill(cursor):
    """Make every item's vectors, printing progress. Returns how many items it embedded."""
    progress = progress_printer(LABEL)
    cursor.execute("SELECT count(*) FROM items")
    total = cursor.fetchone()[0]
    model = load_model() if total else None
    done = 0
    for rows in each_batch(cursor, "title, summary, questions, original", _ITEMS):
        texts = [text_of(*row[1:]) for row in rows]
        vectors = chunk_vectors(model, texts)
        cursor.executemany(f"INSERT OR REPLACE INTO {TABLE} (item_id, digest, chunks) VALUES (%s, %s, %s)",
                           [(row[0], digest(text), to_blob(chunks))
                            for row, text, chunks in zip(rows, texts, vectors, strict=True)])
        done += len(rows)
        progress(done, total)
    return done


def drop(cursor):
    cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cursor.execute(f"DROP TABLE IF EXISTS {STATE}")
