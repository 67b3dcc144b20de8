"""Exceptions that carry a message a person can act on.

The CLI maps each class to an exit code; nothing else in the package returns error values.
"""

from __future__ import annotations


class DistilldError(Exception):
    """Base class: the message names the file and says what to do."""

    exit_code = 2


class StoreError(DistilldError):
    """The store cannot be read as a store (missing root, unreadable directory)."""


class PolicyError(DistilldError):
    """A policy file is missing, unreadable or invalid."""
