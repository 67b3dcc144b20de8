"""``cached``: a value computed on first access and kept on the instance.

It is ``functools.cached_property`` without the lock that Python 3.11 takes on each first
access (3.12 dropped it). A check asks each of 12,000 files for a few facts, so the lock was a
large share of its time. The models using it are pure functions of bytes: two threads
computing the same value at once both get the same answer, so nothing needs the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class cached(Generic[T]):
    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | cached[T]:
        if instance is None:
            return self
        # Kept in the instance's __dict__, which Python reads before this (non-data) descriptor:
        # later reads cost a plain attribute lookup, as with cached_property.
        value = self.func(instance)
        instance.__dict__[self.name] = value
        return value
