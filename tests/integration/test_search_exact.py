"""The default search gives exactly the answer of the exhaustive one (docs/design.md "Exact at
speed"): the same items in the same order with the same scores, whatever the filters and the
caller's sources, before and after `optimize`, after writes since, after deletes.

`search(..., exhaustive=True)` is the reference: FTS5 scores every matching item of each
index in one statement, the filters in the same WHERE. The default reads common terms from
their postings (library.postings) and filters over the item catalog (library.catalog). A
random library with a Zipf vocabulary, dense short items and long ones in different sources
and projects, is searched with random queries under every filter; the postings apply at a
scaled-down threshold (`postings.POSTED`: 100 items in use, 6 here), and the ranking's two
rules too (`ranking.COMMON`: 1,000 in use, 12 here)."""

import random
from datetime import timedelta

import pytest
from django.db import connection

from library import postings, ranking, store
from library import search as lib
from library.filters import ALL_SOURCES
from library.indexes import ORIGINAL, WORDS
from library.models import Item
from tests.conftest import NOW, days_ago

pytestmark = pytest.mark.django_db

SYLLABLES = ("de", "ploy", "ment", "con", "fig", "ur", "ser", "ver", "ga", "te", "way", "run", "ner", "da", "ta",
             "base", "lock", "time", "out", "cache", "mi", "gra", "tion", "build", "test", "log", "ing", "ed", "re",
             "port", "trans", "ex", "ec", "ute", "pro", "cess", "in", "dex", "sync", "shard")
SPECIAL = ("gunicorn", "café", "naïve", "über", "部署", "服务器", "kestrel", "snake_case", "file.py", "HTTP_404")
STOP = ("the", "why", "how", "did", "we", "of", "to")
SOURCES = ("laptop-a1", "laptop-b", "phone")
PROJECTS = ("aproj", "bproj", None)


def vocabulary(rng, size=260):
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3)))))
    return sorted(words) + list(SPECIAL)


class Library:
    """A random library: a Zipf vocabulary (the commonest words held by most items, a long
    tail by few), short dense items in laptop-a1, long ones in laptop-b, some in phone."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.rng.shuffle(self.words)
        self.weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self.words))]
        self.made = 0

    def text(self, count):
        return " ".join(self.rng.choices(self.words, self.weights, k=count))

    def item(self, source=None):
        rng = self.rng
        self.made += 1
        source = source or rng.choices(SOURCES, (5, 3, 2))[0]
        long = source == "laptop-b"
        return Item(
            key=f"{source}:unit-{self.made}-{rng.random()}", source=source, project=rng.choice(PROJECTS),
            title=self.text(rng.randint(2, 6)), summary=self.text(rng.randint(6, 20)),
            questions=[self.text(5) + "?" for _ in range(rng.randint(0, 3))],
            atoms=[{"kind": "fact", "text": self.text(6)} for _ in range(rng.randint(0, 3))],
            original=f"user: {self.text(rng.randint(250, 900) if long else rng.randint(8, 40))}",
            occurred_at=NOW - timedelta(days=rng.uniform(0, 400), seconds=rng.randint(0, 86_400)))

    def add(self, count):
        return Item.objects.bulk_create([self.item() for _ in range(count)])

    def query(self):
        rng = self.rng
        kind = rng.randrange(8)
        words = rng.choices(self.words, self.weights, k=rng.randint(1, 4))
        if kind == 0:          # a fragment: the words a prefix begins (the record), a word (what was said)
            word = rng.choice([w for w in self.words if len(w) >= 5])
            return word[:rng.randint(3, len(word) - 1)]
        if kind == 1:          # a quoted phrase, sometimes of common words, with a word
            return f'"{words[0]} {rng.choice(self.words)}" ' + " ".join(words[1:])
        if kind == 2:          # a question in words with common ones
            return " ".join([rng.choice(STOP), *words, rng.choice(STOP)])
        if kind == 3:          # the commonest words alone: left out, or listed by date
            return " ".join(self.words[:rng.randint(1, 2)])
        if kind == 4:
            return " ".join([*words, rng.choice(SPECIAL)])
        return " ".join(words)


FILTERS = (
    {},
    {"project": "aproj"},
    {"source": "laptop-b"},
    {"since": days_ago(120).isoformat()},
    {"allowed_sources": ["laptop-b"]},                       # a client limited to one source
    {"allowed_sources": ["laptop-a*", "phone"]},             # … to two
    {"allowed_sources": ["laptop-b"], "project": "bproj"},   # the first-prompt hook's own-project search
    {"allowed_sources": ["laptop-a*"], "since": days_ago(300).isoformat(), "project": "aproj"},
    {"allowed_sources": ["nobody-*"]},
)


def compare(query, **asked):
    """The default and the exhaustive search of `query` agree; returns the hits."""
    asked = {"allowed_sources": ALL_SOURCES, "now": NOW, **asked}
    fast = lib.search(query, **asked)
    reference = lib.search(query, exhaustive=True, **asked)
    where = f"{query!r} {asked}"
    assert [(h.id, h.matched_in) for h in fast.hits] == [(h.id, h.matched_in) for h in reference.hits], where
    for mine, theirs in zip(fast.hits, reference.hits, strict=True):
        assert abs(mine.score - theirs.score) <= 1e-9 * max(1.0, abs(theirs.score)), where
    assert (fast.match, fast.original_match, fast.newest) == (reference.match, reference.original_match,
                                                               reference.newest), where
    return fast.hits


def sweep(library, queries):
    """Compare every query under every filter — and `since` at an item's own date, where
    "inclusive" matters — at a few page sizes; returns how many comparisons were made and how
    many had results."""
    compared = found = 0
    dates = list(Item.objects.values_list("occurred_at", flat=True))
    for query in queries:
        at = library.rng.choice(dates).isoformat()
        for asked in (*FILTERS, {"since": at}, {"allowed_sources": ["laptop-b", "phone"], "since": at}):
            limit = library.rng.choice((5, 10, 50))
            offset = library.rng.choice((0, 0, 0, 7))
            found += bool(compare(query, limit=limit, offset=offset, **asked))
            compared += 1
    return compared, found


def served_by_postings(queries):
    """How many of the queries score at least one term from the postings."""
    served = 0
    with postings.reading(), connection.cursor() as cursor:
        bases = {index.name: postings.base(cursor, index) for index in (WORDS, ORIGINAL)}
        for query in queries:
            counts = ranking._PostedCounts(cursor, bases)
            hit = False
            for index in (WORDS, ORIGINAL):
                rows, tokens = postings.averages(cursor, index)
                asked = ranking.ask(index, query, counts, rows, tokens)
                hit = hit or any(counts.postings_of(index, term) is not None for term in asked.scored)
            served += hit
    return served


@pytest.fixture
def scaled(monkeypatch):
    """A token more than 6 items hold has postings (100 in use); the ranking's rules act past
    12 (1,000 in use)."""
    monkeypatch.setattr(postings, "POSTED", 6)
    monkeypatch.setattr(ranking, "COMMON", 12)


def test_the_default_search_is_the_exhaustive_one_through_every_state_of_the_library(scaled):
    """Random queries × every filter (≥ 2,000 comparisons), before and after optimize, after
    writes since, after deletes, after a second optimize (a merge)."""
    library = Library(seed=23)
    library.add(320)
    total = 0

    def phase(count):
        nonlocal total
        queries = [library.query() for _ in range(count)]
        compared, found = sweep(library, queries)
        total += compared
        assert found > compared // 3          # the comparisons are of real result lists
        return queries

    phase(50)                                            # no postings yet: every term scored by FTS5
    report = store.optimize()
    assert report["terms"] >= 60 and report["weightless"] >= 2
    queries = phase(60)
    assert served_by_postings(queries) >= 30

    library.add(40)                                      # written since the refresh: the fresh table
    changed = list(Item.objects.order_by("?")[:30])
    for item in changed[:15]:
        item.original = f"user: {library.text(library.rng.randint(20, 400))}"
    for item in changed[15:]:
        item.title, item.project = library.text(4), library.rng.choice(PROJECTS)
    Item.objects.bulk_update(changed, ["original", "title", "project"])
    Item.objects.filter(pk__in=[item.pk for item in changed[:5]]).update(source="phone")
    phase(60)

    Item.objects.filter(pk__in=list(Item.objects.order_by("?").values_list("pk", flat=True)[:40])).delete()
    phase(50)

    report = store.optimize()                            # the changes folded into a new base
    assert report["items"] > 0
    phase(40)
    print(f"\ndifferential: {total} comparisons of the default search with the exhaustive reference")
    assert total >= 2_000
    assert store.check().ok


def test_a_word_weighs_the_same_after_every_refresh_as_fts5_gives_it(scaled):
    """bm25 of a common word, read from the postings, is FTS5's own, after one optimize, a
    second, and after writes and another."""
    library = Library(seed=5)
    library.add(200)
    store.optimize()
    with postings.reading(), connection.cursor() as cursor:
        base = postings.base(cursor, ORIGINAL)
        word = next(w for w in library.words if base.term(w) and base.term(w).has_postings)   # common, not held by half

    def scores():
        fast = {h.id: h.score for h in lib.search(word, allowed_sources=ALL_SOURCES, now=NOW, limit=50).hits}
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT rowid, -bm25({ORIGINAL.table}) FROM {ORIGINAL.table} "
                           f"WHERE {ORIGINAL.table} MATCH %s", [f'"{word}"'])
            return fast, dict(cursor.fetchall())

    seen = []
    for _ in range(2):
        store.optimize()
        with postings.reading(), connection.cursor() as cursor:
            base = postings.base(cursor, ORIGINAL)
            found = postings.current(cursor, ORIGINAL, base, word)
            rows, tokens = postings.averages(cursor, ORIGINAL)
            part = dict(zip(found.items.tolist(), ranking.part(found, rows, tokens).tolist(), strict=True))
        fast, fts5 = scores()
        assert part == fts5                   # to the last bit
        seen.append(fast)
    assert seen[0] == seen[1]
    library.add(30)
    store.optimize()
    with postings.reading(), connection.cursor() as cursor:
        base = postings.base(cursor, ORIGINAL)
        found = postings.current(cursor, ORIGINAL, base, word)
        rows, tokens = postings.averages(cursor, ORIGINAL)
        assert dict(zip(found.items.tolist(), ranking.part(found, rows, tokens).tolist(), strict=True)) == scores()[1]


def test_writes_after_the_refresh_are_found_and_what_went_is_not(scaled):
    library = Library(seed=7)
    library.add(120)
    store.optimize()
    word = library.words[2]
    gone = Item.objects.filter(original__contains=word).first()
    gone.delete()
    new = Item.objects.bulk_create([library.item() for _ in range(3)])[0]
    new.original = f"user: {word} {word} {word}"
    new.save()
    hits = compare(word, limit=50)
    assert gone.pk not in [hit.id for hit in hits]
    assert new.pk in [hit.id for hit in hits]
    assert store.check().ok


def test_check_sees_postings_that_differ_from_the_index_and_reindex_repairs_them(scaled):
    library = Library(seed=11)
    library.add(150)
    store.optimize()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT generation FROM {postings.STATE} WHERE name = %s", [ORIGINAL.name])
        generation = cursor.fetchone()[0]
        cursor.execute(f"SELECT term, items FROM {ORIGINAL.postings_table} WHERE generation = %s AND items IS NOT NULL "
                       f"LIMIT 1", [generation])
        term, items = cursor.fetchone()
        cursor.execute(f"UPDATE {ORIGINAL.postings_table} SET items = %s, freqs = substr(freqs, 3) "
                       f"WHERE generation = %s AND term = %s", [items[4:], generation, term])
    postings.forget_cached_bases()
    report = store.check()
    assert any(f'postings of "{term}" in the original-text index name' in problem for problem in report.problems)
    assert any("run `jezero reindex --only original`" in problem for problem in report.problems)
    store.rebuild(only="original")
    assert store.check().ok


def test_two_refreshes_at_once_leave_one_base_and_the_same_answers(scaled, monkeypatch):
    """The worker's refresh and `jezero optimize` may overlap: the first to finish makes its
    base current, the other drops what it made."""
    library = Library(seed=13)
    library.add(150)
    store.optimize()
    library.add(20)
    install = postings._install
    overtaken = []

    def overtake(index, old, new, seq, using):   # another refresh finishes first
        if not overtaken:
            overtaken.append(new)
            postings.refresh(index, store.recorded_tokenizers()["original"], using)
        return install(index, old, new, seq, using)

    monkeypatch.setattr(postings, "_install", overtake)
    postings.refresh(ORIGINAL, store.recorded_tokenizers()["original"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT generation, current FROM {postings.STATE} WHERE name = %s", [ORIGINAL.name])
        generation, current = cursor.fetchone()
        cursor.execute(f"SELECT DISTINCT generation FROM {ORIGINAL.postings_table}")
        kept = [row[0] for row in cursor.fetchall()]
    assert current and generation != overtaken[0] and kept == [generation]
    for query in [library.query() for _ in range(30)]:
        compare(query)
    assert store.check().ok


@pytest.mark.django_db(transaction=True)
def test_an_upgraded_library_is_searched_exactly_at_once_and_gets_its_postings_from_the_worker(scaled):
    """Migration 0014 replaces the common-word lists with empty postings tables: until they are
    made every term is scored by FTS5 (the same answers); the worker's check makes them."""
    from django.core.management import call_command

    from library import tasks

    library = Library(seed=17)
    library.add(120)
    call_command("migrate", "library", "0013", verbosity=0)   # a library from before the postings
    call_command("migrate", "library", verbosity=0)
    postings.forget_cached_bases()
    assert store.postings_due()
    queries = [library.query() for _ in range(20)]
    before = [compare(query) for query in queries]
    tasks.refresh_postings_if_due.call_local()
    assert not store.postings_due()
    with postings.reading(), connection.cursor() as cursor:
        assert postings.base(cursor, ORIGINAL) is not None
    assert [compare(query) for query in queries] == before
    assert store.check().ok
