"""The control socket: owner-only, one JSON line each way, and a client error when nobody runs."""

from __future__ import annotations

import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distilld.errors import NotRunning
from distilld.runtime.control import ControlServer, send


@pytest.fixture
def server(distilld_dirs: dict[str, Path]) -> Iterator[tuple[ControlServer, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    def dispatch(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        if request.get("cmd") == "boom":
            raise RuntimeError("kaboom")
        return {"ok": True, "echo": request}

    control = ControlServer(distilld_dirs["runtime"] / "t.sock", dispatch)
    control.start()
    try:
        yield control, seen
    finally:
        control.close()


def test_round_trip_and_owner_only(server: tuple[ControlServer, list[dict[str, Any]]]) -> None:
    control, seen = server
    assert stat.S_IMODE(control.path.stat().st_mode) == 0o600
    assert send(control.path, {"cmd": "status"}) == {"ok": True, "echo": {"cmd": "status"}}
    assert seen == [{"cmd": "status"}]


def test_bad_requests_get_an_error_and_the_server_lives(server: tuple[ControlServer, list[dict[str, Any]]]) -> None:
    control, _ = server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(control.path))
        sock.sendall(b"not json\n")
        assert b"one JSON object" in sock.recv(4096)
    assert send(control.path, {"cmd": "boom"}) == {"ok": False, "error": "kaboom"}
    assert send(control.path, {"cmd": "status"})["ok"] is True


def test_a_stale_socket_file_is_replaced(distilld_dirs: dict[str, Path]) -> None:
    path = distilld_dirs["runtime"] / "stale.sock"
    old = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old.bind(str(path))
    old.close()  # a crashed daemon's leftover
    with pytest.raises(NotRunning):
        send(path, {"cmd": "status"})
    control = ControlServer(path, lambda request: {"ok": True})
    control.start()
    try:
        assert send(path, {"cmd": "status"}) == {"ok": True}
    finally:
        control.close()
    assert not path.exists()


def test_nobody_running(distilld_dirs: dict[str, Path]) -> None:
    with pytest.raises(NotRunning) as raised:
        send(distilld_dirs["runtime"] / "none.sock", {"cmd": "status"})
    assert raised.value.exit_code == 3
