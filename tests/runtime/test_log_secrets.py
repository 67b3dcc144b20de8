"""The JSON debug log keeps tracebacks as data but never the frames' local variables: a token or
a key path held in a local of a failing pass must not reach distilld.jsonl."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from distilld.log import configure_logging
from distilld.runtime import job_runner, jobs

SECRET = "ghp_planted0123456789secretTOKEN"


def failing_pass(env: object, trigger: str) -> jobs.PassResult:
    token_from_settings = SECRET  # a local, as a credentials lookup would hold it
    raise RuntimeError(f"the remote refused us (token length {len(token_from_settings)})")


def test_a_failing_pass_does_not_put_its_locals_in_the_json_log(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    log_file = tmp_path / "distilld.jsonl"
    configure_logging(log_file, "info", "off")
    try:
        try:
            failing_pass(None, "test")
        except RuntimeError:
            job_runner.log.exception("job.crashed", job="sync")  # what run_job does with a crashed pass
    finally:
        for handler in logging.getLogger().handlers:
            handler.flush()
    text = log_file.read_text()
    record = json.loads(text.splitlines()[-1])
    assert record["event"] == "job.crashed" and record["exception"]  # the traceback is there, as data
    frames = record["exception"][0]["frames"]
    assert any(frame["name"] == "failing_pass" for frame in frames)
    assert SECRET not in text
    assert all(not frame.get("locals") for frame in frames)
