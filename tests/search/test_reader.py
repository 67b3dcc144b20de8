"""read_knowledge serves the store's knowledge files and nothing else: no data/, .git/, state,
symbolic links, paths outside the store or non-UTF-8 names or bytes."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import healthy_store

from distilld.search.answers import read_answer
from distilld.search.fingerprint import is_knowledge_path
from distilld.search.query import QueryError
from distilld.search.session import SearchIndex

HOSTILE = ["../outside.md", "/etc/passwd", "craft/../../outside.md", "craft/../SPINE.md", "./SPINE.md",
           "craft//testing.md", "craft/./testing.md", "craft/", "craft", "data/secret.md", "data/x/y.md",
           ".git/HEAD", ".git/config", "craft/.hidden.md", "bin/distill-lock.sh", "inbox/item.md",
           "C:\\Windows\\win.ini", "craft\\testing.md", "~/.ssh/id_rsa", "~", "", " ", "craft/testing.md\x00.png",
           "craft/link.md", "craft/dirlink/secret.md", "linked/secret.md", "craft/te\udcffst.md", "\udcff",
           "craft/binary.md", "craft/missing.md", "archive/", "evidence", "craft/testing.txt", "topics/x.md",
           "local/../data/secret.md", "SPINE.md/..", "CATALOG.md/x", "%2e%2e/outside.md", "craft/%2e%2e/x.md",
           "craft/testing.md ", "craft/testing.md\n", "\\\\server\\share\\x.md", "file:///etc/passwd"]
SERVED = ["SPINE.md", "CATALOG.md", "craft/testing.md", "evidence/craft/testing.md", "archive/projects/marlin.md",
          "archive/LEDGER.md", "local/SPINE.md", "local/notes.md"]


def hostile_store(tmp_path: Path) -> Path:
    b = healthy_store(tmp_path / "store")
    (tmp_path / "outside.md").write_text("# outside\n")
    (tmp_path / "secret-dir").mkdir()
    (tmp_path / "secret-dir/secret.md").write_text("# secret\n")
    b.write("data/secret.md", "# data\n").write("data/x/y.md", "# data\n").write("inbox/item.md", "# inbox\n")
    b.write("craft/.hidden.md", "# hidden\n").write("bin/distill-lock.sh", "#!/bin/sh\n")
    b.write("topics/x.md", "# unmanaged\n").write("craft/binary.md", b"# bin\n\xff\xfe\x00\n")
    b.write("local/SPINE.md", "# Local index\n").write("local/notes.md", "# local notes\n")
    (b.root / "craft/link.md").symlink_to(tmp_path / "outside.md")
    (b.root / "craft/dirlink").symlink_to(tmp_path / "secret-dir")
    (b.root / "linked").symlink_to(tmp_path / "secret-dir")
    return b.root


def test_every_hostile_path_is_refused_with_a_reason(tmp_path: Path) -> None:
    index = SearchIndex(hostile_store(tmp_path))
    answer = read_answer(index, HOSTILE)
    assert len(answer["files"]) == len(HOSTILE)
    for asked, got in zip(HOSTILE, answer["files"]):
        assert "text" not in got and got["error"], asked
    binary = answer["files"][HOSTILE.index("craft/binary.md")]
    assert binary["error"].startswith("not UTF-8 text")
    assert answer["files"][HOSTILE.index("craft/link.md")]["error"].startswith("a symbolic link")


def test_knowledge_files_are_served_as_they_are(tmp_path: Path) -> None:
    root = hostile_store(tmp_path)
    answer = read_answer(SearchIndex(root), SERVED)
    for asked, got in zip(SERVED, answer["files"]):
        assert got["text"] == (root / asked).read_text(encoding="utf-8"), asked
    assert answer["fingerprint"]


def test_a_batch_is_a_list_of_at_most_fifty(tmp_path: Path) -> None:
    index = SearchIndex(healthy_store(tmp_path / "store").root)
    for bad in ([], None, 7, {"p": 1}, ["SPINE.md"] * 51):
        with pytest.raises(QueryError):
            read_answer(index, bad)
    assert read_answer(index, [3, None])["files"][0]["error"].startswith("not a path")


@pytest.mark.slow
def test_ten_thousand_hostile_reads_open_nothing_outside_the_knowledge_files(tmp_path: Path) -> None:
    root = hostile_store(tmp_path).resolve()
    index = SearchIndex(root)
    read_answer(index, ["SPINE.md"])  # the index is built before the audit starts
    opened: list[str] = []
    watching = [True]

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and watching[0] and args and isinstance(args[0], (str, bytes, os.PathLike)):
            opened.append(os.fsdecode(args[0]))

    sys.addaudithook(audit)  # audit hooks cannot be removed: this one is switched off below
    rng = random.Random(25)
    served = 0
    try:
        for _ in range(10_000):
            batch = [rng.choice(HOSTILE) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.2:
                batch.append(rng.choice(SERVED))
            for got in read_answer(index, batch)["files"]:
                served += "text" in got
    finally:
        watching[0] = False
    assert served > 1000
    outside = set()
    for path in opened:
        absolute = Path(path) if os.path.isabs(path) else Path.cwd() / path
        relative = os.path.relpath(absolute, root)
        if relative.startswith("..") or not is_knowledge_path(relative.replace(os.sep, "/")) \
                or os.path.islink(absolute):
            outside.add(path)
    assert outside == set()
    assert opened  # the hook saw the reads it was there to watch
