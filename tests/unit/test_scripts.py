"""What a word and an item are written in (`library.tokens`): the first-prompt rule counts a
word's rarity among the items of its own script, or of its own language for Latin-script
languages other than English (docs/design.md "The first-prompt rule")."""

from library.tokens import SCRIPTS, language_of, script_of, scripts_of


def names(bits):
    return {name for i, name in enumerate(SCRIPTS) if bits & (1 << i)}


def test_a_word_is_in_the_script_of_its_letters():
    assert script_of("deploy") == "latin"
    assert script_of("café") == "latin"
    assert script_of("проект") == "cyrillic"
    assert script_of("工程") == "han"
    assert script_of("ライ") == "kana"
    assert script_of("の修") == "kana"       # a Japanese phrase with kana is Japanese, not Chinese
    assert script_of("데이") == "hangul"
    assert script_of("x86_64") == "latin"


def test_an_item_is_written_in_a_script_from_twenty_of_its_letters_up():
    assert names(scripts_of("fix the deploy script")) == {"latin"}
    assert names(scripts_of("请你纵观整个工程" * 3)) == {"latin", "han"}
    assert names(scripts_of("请你纵观")) == {"latin"}             # a few characters in an English session
    assert names(scripts_of("uvのセットアップを実行して、python仮想環境を構築して欲しいな" * 3)) >= {"kana", "han"}
    assert names(scripts_of("데이터베이스 마이그레이션을 실행해 주세요 그리고 결과를 알려 주세요")) == {"latin", "hangul"}
    assert names(scripts_of("Проанализируй весь проект и файлы папки docs, бот перестал отвечать")) == {
        "latin", "cyrillic"}


def test_title_summary_and_original_count_together():
    assert "cyrillic" in names(scripts_of("Проект", "папки файлы", "документация бота"))


def test_latin_languages_from_their_function_words():
    spanish = "Revisa este proyecto, lee el codigo para que te pongas en contexto. " * 8
    assert "es" in names(scripts_of(spanish))
    assert "es" not in names(scripts_of("Revisa este proyecto"))          # too little to tell
    assert names(scripts_of("Please read the code and fix the bug in this project. " * 10)) == {"latin"}


def test_the_language_of_a_prompt():
    assert language_of("Revisa este proyecto, lee el codigo detenidamente para que te pongas en contexto.") == "es"
    assert language_of("Créer une description de pull request github") == "fr"
    assert language_of("Nel mio docker ho un container che non parte, come faccio a sapere il repository") == "it"
    assert language_of("fix the bug in the login page") is None
    assert language_of("stripe webhook retries") is None   # too little to tell: English's rules
    assert language_of("") is None


def test_non_latin_text_costs_little_and_ascii_nothing():
    assert scripts_of("a" * 1_000_000) == 1
