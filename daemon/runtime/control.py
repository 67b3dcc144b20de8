"""The control socket: a Unix stream socket, one JSON request line in, one JSON reply line out.

Only the owner can use it: the runtime folder is 0700, the socket 0600, and on Linux the peer's
uid is checked as well. Commands: ``status``, ``run-now`` (optionally ``job``), ``pause``,
``resume``, ``reload``.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import NotRunning
from ..log import get_logger

Handler = Callable[[dict[str, Any]], dict[str, Any]]
MAX_REQUEST = 64 * 1024

log = get_logger("distilld.control")


def _peer_uid(sock: socket.socket) -> int | None:
    if sys.platform.startswith("linux"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    return None  # elsewhere the socket's 0600 mode in a 0700 folder is the check


class _RequestHandler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        try:
            uid = _peer_uid(self.request)
            if uid is not None and uid != os.getuid():
                self._reply({"ok": False, "error": "not the owner of this daemon"})
                return
            line = self.rfile.readline(MAX_REQUEST)
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                self._reply({"ok": False, "error": "send one JSON object per line"})
                return
            self._reply(self.server.dispatch(request))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as error:  # a bad request must never take the server down
            log.exception("control.failed")
            try:
                self._reply({"ok": False, "error": str(error)})
            except OSError:
                pass

    def _reply(self, payload: dict[str, Any]) -> None:
        self.wfile.write((json.dumps(payload, default=str) + "\n").encode("utf-8"))


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, dispatch: Handler) -> None:
        self.dispatch = dispatch
        super().__init__(path, _RequestHandler)


class ControlServer:
    def __init__(self, path: Path, dispatch: Handler) -> None:
        self.path = path
        self._dispatch = dispatch
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind (after the instance lock is held, so a leftover socket file is surely stale)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        old = os.umask(0o177)  # the socket is created 0600; set before any other thread starts
        try:
            self._server = _Server(str(self.path), self._dispatch)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        # A long poll keeps an idle daemon asleep; close() wakes the loop with a connection.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 60.0},
                                        name="distilld-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._server is not None:
            stopper = threading.Thread(target=self._server.shutdown, daemon=True)
            stopper.start()
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(1.0)
                    sock.connect(str(self.path))
            except OSError:
                pass
            stopper.join(5)
            self._server.server_close()
            self._server = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def send(path: Path, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """One request to a running daemon; NotRunning when nobody answers on the socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotRunning(f"no daemon follows this store ({path} does not answer); start it with "
                             "`distilld run` or `distilld service install --start`") from None
        sock.sendall((json.dumps(request) + "\n").encode("utf-8"))
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    try:
        reply = json.loads(data)
    except ValueError:
        raise NotRunning(f"{path}: no valid reply from the daemon") from None
    return reply if isinstance(reply, dict) else {"ok": False, "error": "unexpected reply"}
