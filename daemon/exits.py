"""The exit codes of every command: one table, shown in `distilld --help` and in the README.

Every exception and every command takes its code from here (the store lock's own exceptions
carry the lock script's codes, which the command line maps to these)."""

from __future__ import annotations

OK = 0
CHECK_FAILED = 1
USAGE = 2
NOT_RUNNING = 3
LOCK_LOST = 4
LOCK_HELD = 5
ALREADY_RUNNING = LOCK_HELD  # another distilld follows the store: its instance lock is held
STORE_UNSAFE = 6
SYNC_SKIPPED = 7
SYNC_FAILED = 8
NOT_FOUND = 9
BAD_SETTINGS = 78
INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (OK, "success: the store passes, the pass finished, in sync, the daemon runs"),
    (CHECK_FAILED, "a check failed: the store, or a pass's closing self-check, fails C1-C4"),
    (USAGE, ("usage error, or the command could not run (a missing store, a store this user may not "
             "read or write, an unreadable file): the message names it")),
    (NOT_RUNNING, "not running: no daemon follows the store (status, run-now, pause, resume), "
                  "or the service is not installed (service status)"),
    (LOCK_LOST, "the store's .lock was lost mid-pass or could not be read or written"),
    (LOCK_HELD, "refused: the lock is held (a distillation runs: retry, or --wait S; "
                "or another distilld already follows this store)"),
    (STORE_UNSAFE, "refused: the store cannot be changed safely (an unreadable SPINE or ledger, "
                   "a pre-1.2 store, a pending migration, a crash it cannot explain, a refused migration)"),
    (SYNC_SKIPPED, "sync skipped or blocked (the lock or git busy, a merge that would fail the checks, "
                   "a commit that must not be pushed)"),
    (SYNC_FAILED, "sync failed: offline, the push was rejected, or a byte mismatch after a pull"),
    (NOT_FOUND, "not found: the store holds nothing on the query (find, bundle); an honest miss, not an error"),
    (BAD_SETTINGS, ("bad settings or a bad policy file: the message names the key or the file "
                    "(the service is not restarted)")),
    (INTERRUPTED, "interrupted (Ctrl-C); a write pass says how it is finished"),
)


def exit_table_text() -> str:
    """The table for --help (click keeps lines starting with \\b as they are)."""
    rows = [f"  {code:>2}  {meaning}" for code, meaning in EXIT_CODES]
    return "\b\nExit codes:\n" + "\n".join(rows)


def exit_table_markdown() -> str:
    """The table as the README has it."""
    rows = [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES]
    return "\n".join(["| exit | meaning |", "|---|---|", *rows])
