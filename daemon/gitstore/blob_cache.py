"""Blob bytes by id, kept between merges of one process (the daemon syncs the same store again and
again, and each diverged sync reads three trees that share nearly every file with the last one).

A blob id names its bytes for good, in any repository, so nothing ever has to be invalidated:
the cache only bounds its size, dropping the least recently used blobs first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pygit2

DEFAULT_MAX_BYTES = 128 * 1024 * 1024  # a real store is a few MB; the bound is for stores far beyond


class BlobCache:
    """A size-bounded LRU map of blob id to bytes, safe to share between threads."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._blobs: OrderedDict[pygit2.Oid, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, oid: pygit2.Oid) -> bytes | None:
        with self._lock:
            data = self._blobs.get(oid)
            if data is not None:
                self._blobs.move_to_end(oid)
            return data

    def __setitem__(self, oid: pygit2.Oid, data: bytes) -> None:
        if len(data) > self.max_bytes:
            return  # one blob larger than the whole cache is read again when asked for
        with self._lock:
            if oid in self._blobs:
                return
            self._blobs[oid] = data
            self._size += len(data)
            while self._size > self.max_bytes:
                _, dropped = self._blobs.popitem(last=False)
                self._size -= len(dropped)

    def __len__(self) -> int:
        return len(self._blobs)

    @property
    def size(self) -> int:
        return self._size


class MergeBlobs:
    """One merge's blobs: each read once for the whole merge, whatever the process's cache can
    hold (a store larger than its bound would otherwise be read again side after side), and
    handed to the process's cache for the next merge."""

    def __init__(self, shared: BlobCache) -> None:
        self.shared = shared
        self._mine: dict[pygit2.Oid, bytes] = {}

    def get(self, oid: pygit2.Oid) -> bytes | None:
        data = self._mine.get(oid)
        if data is None:
            data = self.shared.get(oid)
            if data is not None:
                self._mine[oid] = data
        return data

    def __setitem__(self, oid: pygit2.Oid, data: bytes) -> None:
        self._mine[oid] = data
        self.shared[oid] = data


SHARED = BlobCache()  # the process's own: every merge reads through it
