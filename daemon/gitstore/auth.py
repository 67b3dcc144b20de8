"""Talking to the remote without ever hanging: timeouts, a bounded number of credential
attempts, and SSH host keys checked against known_hosts (LIBRARY-NOTES 1.7).

libgit2 asks for credentials again after every rejection and never prompts; pygit2's default
host-key check accepts any key. Both are fixed here. ``~/.ssh/config`` and git credential
helpers are not used by libgit2: the key file, or the ssh agent, comes from distilld's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import CredentialType

CONNECT_TIMEOUT_MS = 10_000
IO_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class Credentials:
    """Machine-local credentials (settings, never the store)."""

    ssh_user: str = "git"
    ssh_key: Path | None = None  # private key file; its public half defaults to <key>.pub
    ssh_public_key: Path | None = None
    passphrase: str = ""
    use_agent: bool = True
    token: str | None = None  # HTTPS personal access token


def apply_timeouts(connect_ms: int = CONNECT_TIMEOUT_MS, io_ms: int = IO_TIMEOUT_MS) -> None:
    """Connect and I/O timeouts for every transport (process-wide in libgit2)."""
    pygit2.settings.server_connect_timeout = connect_ms
    pygit2.settings.server_timeout = io_ms


@dataclass
class _Attempts:
    used: list[str] = field(default_factory=list)


class StoreCallbacks(pygit2.RemoteCallbacks):
    """Each credential method is offered once; the host key must be known; a push that the
    remote rejects is recorded rather than ignored."""

    def __init__(self, credentials: Credentials | None = None) -> None:
        super().__init__()
        self.creds = credentials or Credentials()
        self.attempts = _Attempts()
        self.rejected: list[str] = []

    def _methods(self, user: str, allowed: CredentialType) -> list[tuple[str, Any]]:
        creds = self.creds
        methods: list[tuple[str, Any]] = []
        if allowed & CredentialType.SSH_KEY:
            if creds.ssh_key is not None:
                public = creds.ssh_public_key or creds.ssh_key.with_name(creds.ssh_key.name + ".pub")
                methods.append(("ssh key file", pygit2.Keypair(user, str(public), str(creds.ssh_key),
                                                                creds.passphrase)))
            if creds.use_agent:
                methods.append(("ssh agent", pygit2.KeypairFromAgent(user)))
        if allowed & CredentialType.USERPASS_PLAINTEXT and creds.token:
            methods.append(("token", pygit2.UserPass(user, creds.token)))
        return methods

    def credentials(self, url: str, username_from_url: str | None, allowed_types: CredentialType) -> Any:
        user = username_from_url or self.creds.ssh_user
        if allowed_types & CredentialType.USERNAME:
            if "username" in self.attempts.used:
                raise pygit2.AuthError(f"authentication to {url} failed: the username {user!r} was refused")
            self.attempts.used.append("username")
            return pygit2.Username(user)
        for name, credential in self._methods(user, allowed_types):
            if name not in self.attempts.used:
                self.attempts.used.append(name)
                return credential
        tried = ", ".join(a for a in self.attempts.used if a != "username") or "none available"
        raise pygit2.AuthError(f"authentication to {url} failed (tried: {tried}); not retrying. Check the "
                               "credentials given to distilld (ssh key file, ssh agent, token)")

    def certificate_check(self, certificate: Any, valid: bool, host: bytes | str) -> bool:
        # SSH: True only when known_hosts has a matching key; HTTPS: the TLS verification result.
        return bool(valid)

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message:
            self.rejected.append(f"{refname}: {message}")
