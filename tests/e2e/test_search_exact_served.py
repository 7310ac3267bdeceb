"""A client limited to one source finds every item of it that holds a common word, before and
after `jezero optimize`, on every path: the JSON API, MCP (the official SDK's client), the
CLI and the web page, against a real `jezero serve` (the case of docs/design.md "What did not work: lists of each word's best items", at the real thresholds:
a word more than 1,000 items hold is read from its postings once they are made)."""

import asyncio
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import serving

JEZERO = Path(sys.executable).with_name("jezero")
PASSWORD = "correct horse battery staple 23"
FILLER = ("deploy", "migration", "cache", "worker", "timeout", "socket", "proxy", "nginx", "restart", "config",
          "shard", "replica", "backup", "restic", "cron", "schema", "index", "latency", "queue", "retry")


def records(rng):
    """gunicorn in 1,300 short items of laptop-a1 (aproj) and 40 long ones of laptop-b (bproj),
    in their records and in what was said; 1,435 more without it: 2,775 items."""
    def words(count):
        return " ".join(rng.choice(FILLER) for _ in range(count))

    out = {"laptop-a1": [], "laptop-b": [], "phone": []}
    for n in range(1_300):
        out["laptop-a1"].append({"key": f"a{n}", "title": f"Worker note {n}", "summary": f"gunicorn {words(6)}",
                                 "project": "aproj", "occurred_at": f"2026-{1 + n % 10:02d}-{1 + n % 27:02d}T10:00:00Z",
                                 "original": f"user: restart gunicorn after {words(4)}"})
    for n in range(40):
        out["laptop-b"].append({"key": f"b{n}", "title": f"Long session {n}", "summary": f"{words(10)} gunicorn",
                                "project": "bproj", "occurred_at": f"2026-{1 + n % 10:02d}-15T12:00:00Z",
                                "original": f"user: {words(300)} gunicorn {words(300)} gunicorn workers {words(200)}"})
    for n in range(1_435):
        out["phone" if n % 3 else "laptop-a1"].append({
            "key": f"c{n}", "title": f"Other note {n}", "summary": words(8), "project": "aproj",
            "occurred_at": f"2026-{1 + n % 10:02d}-{1 + n % 27:02d}T08:00:00Z", "original": f"user: {words(30)}"})
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exact")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp / "data"), HOME=str(tmp), JEZERO_ADMIN_PASSWORD=PASSWORD,
               JEZERO_ALLOWED_HOSTS="127.0.0.1,localhost")

    def jezero(*args):
        proc = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    jezero("init")
    for source, rows in records(random.Random(23)).items():
        path = tmp / f"{source}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        jezero("import-jsonl", str(path), "--source", source)
    token = json.loads(jezero("client", "add", "laptop-b-agent", "--sources", "laptop-b", "--json"))["token"]
    with serving(env) as url:
        yield {"url": url, "token": token, "jezero": jezero}


def api(served, **params):
    answer = httpx.get(f"{served['url']}/api/v1/search", params={"q": "gunicorn", "limit": 50, **params},
                       headers={"Authorization": f"Bearer {served['token']}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return [row["key"] for row in answer.json()["results"]]


def mcp(served):
    async def call():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {served['token']}"}, timeout=30) as http:
            async with streamable_http_client(f"{served['url']}/mcp", http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.call_tool("search", {"query": "gunicorn", "limit": 50})

    found = asyncio.run(call())
    assert not found.is_error, found.content
    return [row["key"] for row in found.structured_content["results"]]


def cli(served, *options):
    out = json.loads(served["jezero"]("search", "gunicorn", "--limit", "50", "--json", *options))
    return [row["key"] for row in out["results"]]


def page(served):
    """Every result of the web search for gunicorn in laptop-b, page after page."""
    with httpx.Client(base_url=served["url"], timeout=30, follow_redirects=True) as browser:
        form = browser.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        browser.post("/login/", data={"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": token},
                     headers={"Referer": f"{served['url']}/login/"})
        found, number = [], 1
        while True:
            html = browser.get("/", params={"q": "gunicorn", "source": "laptop-b", "page": number}).text
            assert "Log out" in html
            found += re.findall(r'class="title" href="/items/(\d+)/"', html)
            if f"page={number + 1}" not in html:
                return found
            number += 1


def every_path(served):
    paths = {"api": api(served), "mcp": mcp(served), "cli --source": cli(served, "--source", "laptop-b"),
             "cli --project": cli(served, "--project", "bproj"), "api records_only": api(served, records_only=1)}
    return {name: len(keys) for name, keys in paths.items()} | {"web page": len(page(served))}, paths


def test_a_client_limited_to_one_source_finds_all_of_it_before_and_after_optimize(served):
    before, lists = every_path(served)
    assert before == dict.fromkeys(before, 40)
    assert all(key.startswith("laptop-b:") for key in lists["api"])
    report = json.loads(served["jezero"]("optimize", "--json"))
    assert report["common_terms"] >= 2        # gunicorn (1,340 of 2,775 items), in both word indexes
    after, lists_after = every_path(served)
    assert after == before
    assert lists_after["api"] == lists["api"] and lists_after["mcp"] == lists["mcp"]   # the same order
    assert served["jezero"]("check")
