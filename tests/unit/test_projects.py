"""docs/design.md "Project tags": project tags from hints, in the order of the rules."""

import subprocess

import pytest

from library.ingest.projects import find_git_root, normalise, repo_name_from_remote, resolve

ROOTS = ("~/src", "~/code", "~/projects")


def tag(hints, **kw):
    kw.setdefault("roots", ROOTS)
    kw.setdefault("home", "/home/server")
    return resolve(hints, **kw)


def test_the_connectors_fixed_project_wins_over_everything():
    assert tag({"cwd": "/home/ana/src/shop", "git_remote": "git@x:a/b.git"}, fixed="Family Admin") == ("family-admin", "connector")


def test_path_rules_win_over_git_and_the_longest_prefix_wins():
    paths = {"/home/ana/src": "everything", "/home/ana/src/shop": "shop-site", "~/work": "work"}
    assert tag({"cwd": "/home/ana/src/shop/api", "git_remote": "git@x:a/other.git"}, paths=paths) == ("shop-site", "paths")
    assert tag({"cwd": "/home/ana/src/blog"}, paths=paths) == ("everything", "paths")
    assert tag({"cwd": "/home/ana/src/shopping"}, paths=paths) == ("everything", "paths")  # whole components
    assert tag({"cwd": "/home/server/work/x"}, paths=paths) == ("work", "paths")


def test_the_git_remote_names_the_repository():
    assert tag({"cwd": "/home/ana/src/checkout", "git_remote": "git@github.com:ana/Shop-Site.git"}) == ("shop-site", "git")
    assert tag({"git_remote": "https://gitlab.com/group/sub/recipes-app/"}) == ("recipes-app", "git")


def test_without_a_remote_the_folder_holding_git_names_it():
    assert tag({"cwd": "/home/ana/src/shop/api", "git_root": "/home/ana/src/shop"}) == ("shop", "git")


def test_common_roots_give_the_first_folder_below_in_any_home():
    assert tag({"cwd": "/home/ana/src/recipes/app"}) == ("recipes", "roots")
    assert tag({"cwd": "/Users/tomas/projects/Taxes 2026/q1"}) == ("taxes-2026", "roots")
    assert tag({"cwd": "/home/ana/src"}) == (None, None)  # the root itself names nothing
    assert tag({"cwd": "/opt/things/x"}) == (None, None)


def test_then_the_device_then_the_model():
    assert tag({"cwd": "/tmp/x", "device_project": "Home Server", "model_project": "other"}) == ("home-server", "device")
    assert tag({"cwd": "/tmp/x", "model_project": "  Recipes_App! "}) == ("recipes_app", "model")
    assert tag({}) == (None, None)


@pytest.mark.parametrize(("raw", "slug"), [("Shop Site", "shop-site"), ("--x--", "x"), ("!!!", None), (None, None),
                                           ("ÁRbol", "arbol"), ("a//b", "a-b")])
def test_normalise(raw, slug):
    assert normalise(raw) == slug


def test_repo_names_from_remotes():
    assert repo_name_from_remote("ssh://git@host:2222/team/api.git") == "api"
    assert repo_name_from_remote("") is None


def test_find_git_root_resolves_worktrees_to_the_main_repository(tmp_path):
    main = tmp_path / "shop"
    (main / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "-c", "user.email=a@b.c", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "shop-feature")], check=True)
    assert find_git_root(str(main / "src" / "deep")) == str(main)
    assert find_git_root(str(tmp_path / "shop-feature")) == str(main)
    assert find_git_root(str(tmp_path)) is None
    assert find_git_root("/no/such/folder") is None
