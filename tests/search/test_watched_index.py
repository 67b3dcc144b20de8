"""The server's index and the store's watch (issue 25, speed): while no event came, an answer
checks no file's stamp; an edit in place of a tier file is found on a later query; with no watch
running, every file is checked as before."""

from __future__ import annotations

from pathlib import Path

import distilld.search.session as session
import pytest
from builders import healthy_store
from distilld.runtime.change_counter import ChangeCounter
from distilld.search.answers import find_answer
from distilld.search.session import SearchIndex
from waiting import wait_for


def paths_found(answer: dict[str, object]) -> list[str]:
    return [r["path"] for r in answer["results"]]  # type: ignore[index,union-attr]


def counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    scans: list[int] = []
    real = session.store_state

    def counted(root: Path):  # type: ignore[no-untyped-def]
        scans.append(1)
        return real(root)

    monkeypatch.setattr(session, "store_state", counted)
    return scans


def test_with_a_watch_a_quiet_store_is_not_scanned_and_an_edit_in_place_is_found(
        tmp_path: Path, distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    store = healthy_store(tmp_path / "store").root
    counter = ChangeCounter(store).start()
    try:
        assert counter.count() is not None
        scans = counting_scans(monkeypatch)
        index = SearchIndex(store, changes=counter.count)  # no time-based skip: only the watch spares a scan
        assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"
        first = len(scans)
        for _ in range(5):
            find_answer(index, "schema registry")
        assert len(scans) == first  # nothing changed: no file was stat'ed again

        with open(store / "ops/deploy.md", "a", encoding="utf-8") as handle:  # in place: no folder moves
            handle.write("- The zanzibarquux canary gates every rollout.\n")
        found = wait_for(lambda: paths_found(find_answer(index, "zanzibarquux")) or None, 30,
                         "the edit found through the watch")
        assert found[0] == "ops/deploy.md" and len(scans) > first
    finally:
        counter.stop()


def test_without_a_running_watch_every_call_checks_the_files(
        tmp_path: Path, distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    store = healthy_store(tmp_path / "store").root
    counter = ChangeCounter(store)  # never started
    assert counter.count() is None
    scans = counting_scans(monkeypatch)
    index = SearchIndex(store, changes=counter.count)
    find_answer(index, "schema registry")
    first = len(scans)
    find_answer(index, "schema registry")
    assert len(scans) > first


def test_as_the_server_runs_it_an_edit_the_watch_saw_is_found_at_once_from_that_file_alone(
        tmp_path: Path, distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's index (a folder check standing in for a full one for a second) with its
    watch: once the watch has seen an edit in place (which moves no folder's stamp), the next
    answer has it, read from the file the watch named, without a stat of every file."""
    store = healthy_store(tmp_path / "store").root
    counter = ChangeCounter(store).start()
    try:
        index = SearchIndex(store, recheck_after=3600.0, changes=counter.count, changed_paths=counter.take_changes)
        assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"
        scans = counting_scans(monkeypatch)
        seen = counter.count()
        with open(store / "ops/deploy.md", "a", encoding="utf-8") as handle:
            handle.write("- The quuxzanzibar canary gates every rollout.\n")
        wait_for(lambda: counter.count() != seen, 30, "the watch to see the edit")
        assert paths_found(find_answer(index, "quuxzanzibar")) == ["ops/deploy.md"]  # before: stale for a second
        assert scans == []  # only the file the watch named was looked at

        (store / "ops/deploy.md").rename(store / "ops/deploy-notes.md")  # a rename: both names are told
        wait_for(lambda: paths_found(find_answer(index, "quuxzanzibar")) == ["ops/deploy-notes.md"], 30,
                 "the renamed file found under its new name")
    finally:
        counter.stop()


def test_a_file_added_before_the_watch_told_of_it_is_found_by_the_next_question(
        tmp_path: Path, distilld_dirs: dict[str, Path]) -> None:
    """The watch's events reach its thread a moment after the write. A server asked right after an
    edit in place (told) and a new file (not told yet) took the told paths for all that changed,
    and missed the new file ("a new file: seen at once" failed now and then); its folder's stamp
    moved at once, and that stamp now makes every file be checked."""
    store = healthy_store(tmp_path / "store").root
    told: dict[str, object] = {"count": 0, "paths": set()}
    index = SearchIndex(store, recheck_after=60.0, changes=lambda: told["count"],  # type: ignore[arg-type,return-value]
                        changed_paths=lambda: told.pop("paths", set()))  # type: ignore[arg-type,return-value]
    assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"

    with open(store / "ops/deploy.md", "a", encoding="utf-8") as handle:
        handle.write("- The zanzibarquux canary gates every rollout.\n")
    (store / "craft/narwhal.md").write_text("# Narwhal\n\n- The narwhal rule.\n", encoding="utf-8")
    told["count"], told["paths"] = 1, {"ops/deploy.md"}  # the watch has told of the edit alone

    assert paths_found(find_answer(index, "narwhal")) == ["craft/narwhal.md"]
    assert paths_found(find_answer(index, "zanzibarquux"))[0] == "ops/deploy.md"


def test_a_held_lock_s_heartbeat_in_the_store_folder_does_not_make_every_question_scan(
        tmp_path: Path, distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock's heartbeat renames .lock into the store's own folder once a second, which moves
    that folder's stamp; only the knowledge folders' stamps (and SPINE.md's, CATALOG.md's) say a
    file was added."""
    import os

    store = healthy_store(tmp_path / "store").root
    index = SearchIndex(store, recheck_after=60.0, changes=lambda: 0, changed_paths=lambda: set())
    assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"
    scans = counting_scans(monkeypatch)
    for beat in range(5):
        (store / ".lock.tmp").write_text(f"heartbeat {beat}\n")
        os.replace(store / ".lock.tmp", store / ".lock")  # as the heartbeat does
        assert paths_found(find_answer(index, "schema registry"))[0] == "projects/kestrel.md"
    assert scans == []
