"""The scripts each item is written in (`items_scripts`, kept by `library.store`), for the
first-prompt rule's rarity per script. Frozen: the scripts are computed by this file's own
copy of the rule (`tokens.scripts_of` as of this migration), not by today's code."""

import re

from django.db import migrations

LANGUAGES = ("es", "fr", "pt", "de", "it")
SCRIPTS = ("latin", "cyrillic", "greek", "arabic", "hebrew", "devanagari", "thai", "han", "kana", "hangul",
           *LANGUAGES)
FUNCTION_WORDS = {
    "en": "the and is are of to in it this that with for you can please what how was not but have",
    "es": "el los las del de la por para una esto este esta pero como hacer puedes quiero necesito tengo también hay ya",
    "fr": "le les des de la et un une est dans pour avec pas je vous il faut qui sur du au ce cette peux",
    "pt": "não você uma de com isso está também preciso quero fazer os do da em ao na no",
    "de": "und die der das ist nicht mit ich bitte eine für auch auf den dem zu wir sie",
    "it": "che il gli della sono non questo voglio fare anche per con una mi di lo nel",
}
FUNCTION = {lang: frozenset(words.split()) for lang, words in FUNCTION_WORDS.items()}
WORD_RE = re.compile(r"[^\W\d_]+")
LANGUAGE_WORDS = 20
LANGUAGE_CHARS = 50_000
RANGES = {
    "cyrillic": "\u0400-\u052f", "greek": "\u0370-\u03ff", "arabic": "\u0600-\u06ff\u0750-\u077f",
    "hebrew": "\u0590-\u05ff", "devanagari": "\u0900-\u097f", "thai": "\u0e00-\u0e7f",
    "kana": "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f", "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f",
}
PATTERNS = {name: re.compile(f"[{chars}]") for name, chars in RANGES.items()}
LETTERS = 20


def function_counts(text):
    counts = dict.fromkeys(FUNCTION, 0)
    for word in WORD_RE.findall(text[:LANGUAGE_CHARS].lower()):
        for lang, words in FUNCTION.items():
            if word in words:
                counts[lang] += 1
    return counts


def scripts_of(*texts):
    bits = 1
    counts = dict.fromkeys(FUNCTION, 0)
    for text in texts:
        for lang, count in function_counts(text or "").items():
            counts[lang] += count
    for lang in LANGUAGES:
        if counts[lang] >= LANGUAGE_WORDS:
            bits |= 1 << SCRIPTS.index(lang)
    texts = [text for text in texts if text and not text.isascii()]
    for i, name in enumerate(SCRIPTS[1:len(SCRIPTS) - len(LANGUAGES)], start=1):
        seen = 0
        for text in texts:
            for _match in PATTERNS[name].finditer(text):
                seen += 1
                if seen >= LETTERS:
                    break
            if seen >= LETTERS:
                bits |= 1 << i
                break
    return bits


def fill(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, title, summary, original FROM items ORDER BY id")
        rows = [(item_id, scripts_of(title, summary, original)) for item_id, title, summary, original
                in iter(cursor.fetchone, None)]
        cursor.executemany("INSERT INTO items_scripts(item_id, scripts) VALUES (%s, %s)", rows)


class Migration(migrations.Migration):
    dependencies = [("library", "0016_forget")]

    operations = [
        migrations.RunSQL("CREATE TABLE items_scripts (item_id INTEGER PRIMARY KEY, scripts INTEGER NOT NULL)",
                          "DROP TABLE items_scripts"),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
