"""The first-prompt rule in Chinese, Japanese, Korean, Russian and Spanish: the same word rules
as search (CJK read two characters at a time), rarity counted among the items of the word's
own script or language, and nothing shown on ordinary words of a language few sessions use."""

import random

import pytest

from library import search, store
from library.access import hooks
from library.search import ALL_SOURCES
from tests.conftest import days_ago, make_item

pytestmark = pytest.mark.django_db


def shown(prompt, project=None):
    return hooks.first_prompt(prompt, allowed_sources=ALL_SOURCES, project=project).context


@pytest.fixture
def english():
    """300 English sessions of words of their own: the library most of the items are in."""
    rng = random.Random(7)
    vocabulary = [f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lnrst')}{n}"
                  for n in range(2000)]
    return [make_item(title=f"Session {n}", summary=" ".join(rng.choices(vocabulary, k=8)),
                      original="user: " + " ".join(rng.choices(vocabulary, k=40)), project=f"filler-{n % 30}")
            for n in range(300)]


def test_cjk_prompts_are_read_two_characters_at_a_time():
    words = hooks.prompt_words("请你纵观整个工程")
    assert [w.text for w in words] == ["请你", "你纵", "纵观", "观整", "整个", "个工", "工程"]
    japanese = [w.text for w in hooks.prompt_words("syphonのライブラリを修正して")]
    assert japanese[0] == "syphon" and "ライ" in japanese and "修正" in japanese
    korean = [w.text for w in hooks.prompt_words("데이터베이스 마이그레이션 실행")]
    assert "데이" in korean and "마이" in korean and "실행" in korean


def test_overlapping_phrases_are_one_piece_of_evidence_per_two_characters():
    words = hooks.prompt_words("纵观整个工程 deploy")
    by = {w.text: w for w in words}
    assert hooks.evidence([by["纵观"]]) == 1
    assert hooks.evidence([by["纵观"], by["观整"]]) == 1             # 纵观整: three characters
    assert hooks.evidence([by["纵观"], by["观整"], by["整个"]]) == 2  # 纵观整个: two words
    assert hooks.evidence([by["纵观"], by["整个"], by["deploy"]]) == 3


@pytest.mark.parametrize("language, earlier, prompt", [
    ("zh", ("Vue 前端项目类型识别修复", "请深入分析项目的前后端结构，然后全面修复vue前端项目的所有类型识别和图标组件的引用"),
     "继续修复vue前端项目的图标组件引用错误"),
    ("ja", ("ライブラリの修正", "gui.pyでsyphon-pythonのライブラリの扱い方が間違っているので修正してください"),
     "syphonのライブラリの扱い方をもう一度確認して修正して"),
    ("ko", ("데이터베이스 마이그레이션", "사용자 테이블의 데이터베이스 마이그레이션을 작성하고 실행해 주세요"),
     "데이터베이스 마이그레이션이 실패합니다 다시 실행해 주세요"),
])
def test_a_cjk_prompt_finds_its_projects_earlier_work(english, language, earlier, prompt):
    title, said = earlier
    own = make_item(title=title, summary=said, original=f"user: {said}", project="app", occurred_at=days_ago(3))
    other = make_item(title=title, summary=said, original=f"user: {said}", project="elsewhere", occurred_at=days_ago(2))
    context = shown(prompt, project="app")
    assert f"[{own.id}]" in context, language
    assert f"[{other.id}]" not in context   # only the own project on this evidence


@pytest.mark.parametrize("prompt", ["请你纵观整个工程，分析一下项目结构", "プロジェクト全体を見て構造を分析してください",
                                    "프로젝트 전체 구조를 분석해 주세요"])
def test_ordinary_cjk_words_of_another_project_are_not_evidence(english, prompt):
    """Sessions of other projects in the same language share its ordinary phrases."""
    for n in range(12):
        make_item(title=f"{prompt[:6]} {n}", summary=prompt, original=f"user: {prompt} {n}", project=f"p{n}")
    assert shown(prompt) == ""
    assert shown(prompt, project="mine") == ""


def test_ordinary_words_of_a_language_few_sessions_use_are_not_rare(english):
    """Eight Russian sessions in a library of 300: `проект` and `папки` are in all of them —
    rare in the library, ordinary in Russian (issue: a Russian prompt pulled in unrelated
    Russian sessions)."""
    russian = [make_item(title=f"Бот {n}", summary="Проанализируй весь проект и файлы папки docs",
                         original="user: проанализируй весь проект и файлы папки docs, бот перестал отвечать "
                                  f"на команды {n}", project=f"ru-{n}") for n in range(8)]
    counts = search.script_counts()
    assert counts["cyrillic"] == 8 and counts["latin"] == len(english) + 8
    context = shown("Проанализируй проект и файлы папки docs: бот перестал реагировать на команды")
    assert all(f"[{item.id}]" not in context for item in russian)


def test_ordinary_words_of_a_latin_language_are_counted_among_its_sessions(english):
    spanish = [make_item(title=f"Proyecto {n}", summary="Revisa este proyecto y lee el codigo para el contexto",
                         original="user: revisa este proyecto, lee el codigo detenidamente para que te pongas en "
                                  "contexto. " * 6 + str(n), project=f"es-{n}") for n in range(8)]
    assert search.script_counts()["es"] == 8
    context = shown("Revisa este proyecto, lee el codigo detenidamente para que te pongas en contexto.")
    assert all(f"[{item.id}]" not in context for item in spanish)


def test_the_scripts_follow_every_write_and_check_sees_drift(english):
    from django.db import connection

    item = make_item(title="Бот", summary="Проанализируй весь проект и файлы папки", project="ru")
    assert search.script_counts()["cyrillic"] == 1
    item.summary, item.title = "an English summary now", "English"
    item.save()
    assert search.script_counts()["cyrillic"] == 0
    assert store.check().ok
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {store.SCRIPTS_TABLE} SET scripts = 3 WHERE item_id = %s", [item.id])
    report = store.check()
    assert any("scripts" in line and str(item.id) in line for line in report.problems)
    store.rebuild()
    assert store.check().ok
    item.delete()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {store.SCRIPTS_TABLE} WHERE item_id = %s", [item.id])
        assert cursor.fetchone()[0] == 0
