"""The real transcripts the tests read are the public files their SOURCES.md names, unchanged."""

import hashlib
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def rows(folder):
    """(file, bytes, sha256 prefix) from the SOURCES.md table of `folder`."""
    out = []
    for line in (folder / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0].endswith((".jsonl", ".md")) and cells[1].isdigit():
            out.append((cells[0], int(cells[1]), cells[2]))
    return out


@pytest.mark.parametrize("folder", ["real", "sessions"])
def test_every_real_transcript_is_byte_identical_to_its_source(folder):
    listed = rows(FIXTURES / folder)
    assert listed, "SOURCES.md lists no file"
    for name, size, digest in listed:
        data = (FIXTURES / folder / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()[:len(digest)]) == (size, digest), name
