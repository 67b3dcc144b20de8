"""Talking to a remote never hangs: credentials are offered once each, host keys must be known,
and a silent server times out."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from distilld.gitstore.auth import (
    CONNECT_TIMEOUT_MS,
    IO_TIMEOUT_MS,
    Credentials,
    StoreCallbacks,
    apply_timeouts,
)
from gitmachines import RefusingHttp
from pygit2.enums import CredentialType


def test_each_credential_is_offered_once(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    callbacks = StoreCallbacks(Credentials(ssh_key=key))
    first = callbacks.credentials("ssh://git@host/x.git", "git", CredentialType.SSH_KEY)
    second = callbacks.credentials("ssh://git@host/x.git", "git", CredentialType.SSH_KEY)
    assert isinstance(first, pygit2.Keypair) and not isinstance(first, pygit2.KeypairFromAgent)
    assert first.credential_tuple[1] == str(key) + ".pub"
    assert isinstance(second, pygit2.KeypairFromAgent)
    with pytest.raises(pygit2.AuthError, match="tried: ssh key file, ssh agent"):
        callbacks.credentials("ssh://git@host/x.git", "git", CredentialType.SSH_KEY)


def test_no_agent_and_no_key_fails_at_once() -> None:
    callbacks = StoreCallbacks(Credentials(use_agent=False))
    assert isinstance(callbacks.credentials("ssh://h/x", None, CredentialType.USERNAME), pygit2.Username)
    with pytest.raises(pygit2.AuthError, match="tried: none available"):
        callbacks.credentials("ssh://h/x", None, CredentialType.SSH_KEY)


def test_host_keys_are_checked() -> None:
    callbacks = StoreCallbacks()
    assert callbacks.certificate_check(None, False, b"host") is False
    assert callbacks.certificate_check(None, True, b"host") is True


@pytest.fixture
def short_timeouts() -> Iterator[None]:
    apply_timeouts(1000, 1000)
    yield
    apply_timeouts(CONNECT_TIMEOUT_MS, IO_TIMEOUT_MS)


def test_a_refusing_https_remote_is_asked_once_not_fifteen_times(tmp_path: Path) -> None:
    RefusingHttp.seen = []
    server = http.server.HTTPServer(("127.0.0.1", 0), RefusingHttp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        repo = pygit2.init_repository(str(tmp_path / "r"), initial_head="main")
        remote = repo.remotes.create("origin", f"http://127.0.0.1:{server.server_address[1]}/x.git")
        callbacks = StoreCallbacks(Credentials(token="t"))
        with pytest.raises(pygit2.GitError, match="not retrying"):
            remote.fetch(callbacks=callbacks)
        assert callbacks.attempts.used == ["token"] and len(RefusingHttp.seen) <= 2
    finally:
        server.shutdown()


def test_a_silent_server_times_out(tmp_path: Path, short_timeouts: None) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        repo = pygit2.init_repository(str(tmp_path / "r"), initial_head="main")
        remote = repo.remotes.create("origin", f"http://127.0.0.1:{listener.getsockname()[1]}/x.git")
        started = time.monotonic()
        with pytest.raises(pygit2.GitError, match="timed out"):
            remote.fetch(callbacks=StoreCallbacks())
        assert time.monotonic() - started < 10
