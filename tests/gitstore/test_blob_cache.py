"""The process's cache of blob bytes (gitstore/blob_cache.py): bounded in bytes, least recently
used blobs dropped first, and never a wrong blob for an id."""

from __future__ import annotations

import hashlib

import pygit2
from distilld.gitstore.blob_cache import BlobCache, MergeBlobs


def oid(data: bytes) -> pygit2.Oid:
    return pygit2.Oid(hex=hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())


def test_blobs_are_kept_by_id_within_the_bound_and_the_least_recently_used_go_first() -> None:
    cache = BlobCache(max_bytes=30)
    a, b, c = b"a" * 10, b"b" * 10, b"c" * 10
    for data in (a, b, c):
        cache[oid(data)] = data
    assert cache.size == 30 and len(cache) == 3
    assert cache.get(oid(a)) == a  # a is now the most recently used
    d = b"d" * 10
    cache[oid(d)] = d
    assert cache.get(oid(b)) is None  # b was the least recently used
    assert [cache.get(oid(x)) for x in (a, c, d)] == [a, c, d]
    assert cache.size == 30


def test_a_blob_larger_than_the_bound_is_not_kept_and_drops_nothing() -> None:
    cache = BlobCache(max_bytes=16)
    small = b"small"
    cache[oid(small)] = small
    big = b"x" * 17
    cache[oid(big)] = big
    assert cache.get(oid(big)) is None and cache.get(oid(small)) == small and cache.size == len(small)


def test_an_id_already_kept_is_not_counted_twice() -> None:
    cache = BlobCache(max_bytes=100)
    data = b"same bytes"
    cache[oid(data)] = data
    cache[oid(data)] = data
    assert cache.size == len(data) and len(cache) == 1


def test_a_merge_reads_each_blob_once_even_when_the_process_cache_cannot_hold_them() -> None:
    shared = BlobCache(max_bytes=15)
    merge = MergeBlobs(shared)
    a, b = b"a" * 10, b"b" * 10
    merge[oid(a)] = a
    merge[oid(b)] = b  # the process's cache drops a to keep b
    assert shared.get(oid(a)) is None
    assert merge.get(oid(a)) == a and merge.get(oid(b)) == b  # the merge still has both
    later = MergeBlobs(shared)  # the next merge finds what the process kept
    assert later.get(oid(b)) == b and later.get(oid(a)) is None
