"""A tool's first hour with the API: openapi-python-client generates a client from the live
URL of a running `jezero serve` — the document answers without a token — and that client,
unconfigured, uploads a real session and finds it."""

import gzip
import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import serving, uploading_library

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "claude_7.jsonl"
pytestmark = pytest.mark.skipif(not GENERATOR.exists(), reason="openapi-python-client is not installed")


def test_a_client_generated_from_the_live_url_uploads_a_session(tmp_path):
    env, jezero, token = uploading_library(tmp_path)
    with serving(env) as url:
        made = subprocess.run([str(GENERATOR), "generate", "--url", f"{url}/api/v1/openapi.json", "--meta", "none",
                               "--output-path", str(tmp_path / "live_jezero_api")],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ['PATH']}"})
        said = made.stdout + made.stderr
        assert made.returncode == 0 and "Warning" not in said, said   # every route generated, the upload's too
        sys.path.insert(0, str(tmp_path))
        try:
            client = importlib.import_module("live_jezero_api.client").AuthenticatedClient(base_url=url, token=token)
            models = importlib.import_module("live_jezero_api.models")
            types = importlib.import_module("live_jezero_api.types")
            upload = importlib.import_module("live_jezero_api.api.devices.upload_session")
            with client:   # its connection is closed afterwards (an open socket would warn in a later test)
                answer = upload.sync_detailed(
                    client=client, body=types.File(payload=io.BytesIO(gzip.compress(REAL.read_bytes())),
                                                   file_name="session.jsonl.gz"),
                    agent=models.UploadSessionAgent("claude_code"), session_id="2b4ed4c0", ended=True,
                    content_encoding=models.UploadSessionContentEncoding("gzip"))
            assert answer.status_code == 201, answer.content
            assert answer.parsed.source == "uploads-laptop" and answer.parsed.entries > 3
        finally:
            sys.path.remove(str(tmp_path))
            for name in [name for name in sys.modules if name.split(".")[0] == "live_jezero_api"]:
                del sys.modules[name]
    jezero("run", "--connector", "uploads-laptop")
    assert json.loads(jezero("search", "WebSearch", "--json").stdout)["results"]
