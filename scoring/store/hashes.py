"""Content hashes of a workspace's file sets, and the cache that spares reading unchanged files again.

A refresh compares each suite's and run's `files_hash` with the database's to find what changed.
Hashing reads every byte (1 GB of records at a million records: about 0.4 s on two threads), so a
refresh remembers, in `meta` (`HASHES_KEY`), each file set's hash beside the files' status (name,
size, modification and change times in nanoseconds, inode) and the moment its reading began. A set
whose status is the same is not read again, unless a file was touched less than `RACY_NS` before
that moment: a write in the same tick as the read could leave the status unchanged (git's "racy"
files), so such a set is read again until its files are older than the read. Any write changes the
change time (`st_ctime_ns`, which no program sets), so content copied in with an old modification
time is read again too.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HASHES_KEY = "file_hashes"
"""The `meta` key holding the cache: a JSON object, file-set status -> [hash, read_started_ns]."""

RACY_NS = 2_000_000_000
"""A file touched this close before its set's reading began (or after it) is not trusted by status."""


def files_hash(paths: list[Path]) -> str:
    """Content hash of files (name and bytes), used to skip unchanged suites and runs.

    A file that cannot be read (its problem is reported by the reader) hashes as its name and the error."""
    digest = hashlib.blake2b(digest_size=16)
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        try:
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError as error:
            digest.update(f"\0unreadable: {error.strerror}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


Digest = Callable[[list[Path]], str]
"""A function returning `files_hash` of a list of files."""


def status(paths: list[Path]) -> tuple[str, int] | None:
    """(the set's status as a key, its newest modification or change time); None when a file cannot
    be looked at (it is then hashed, and its problem reported by its reader)."""
    parts, newest = [], 0
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            return None
        parts.append([str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return json.dumps(parts, separators=(",", ":")), newest


@dataclass
class HashCache:
    """File-set hashes known from the last refresh (`known`) and those of this one (`seen`), both
    status key -> (hash, read_started_ns); `read` counts the sets whose bytes were read."""

    known: dict[str, tuple[str, int]] = field(default_factory=dict)
    seen: dict[str, tuple[str, int]] = field(default_factory=dict)
    read: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def loads(cls, text: str | None) -> HashCache:
        """The cache as `meta` holds it (an unreadable value is an empty cache)."""
        try:
            known = {key: (str(value[0]), int(value[1])) for key, value in json.loads(text or "{}").items()}
        except (ValueError, TypeError, IndexError, AttributeError):
            known = {}
        return cls(known)

    def dumps(self) -> str:
        """The sets of this refresh, for `meta` (sets no longer in the workspace are forgotten)."""
        return json.dumps({key: list(value) for key, value in sorted(self.seen.items())}, separators=(",", ":"))

    def cached(self, paths: list[Path]) -> tuple[str | None, tuple[str, int] | None]:
        """(the hash the cache may give for `paths`, or None; their status)."""
        found = status(paths)
        if found is None:
            return None, None
        entry = self.known.get(found[0])
        if entry is not None and found[1] < entry[1] - RACY_NS:
            self.seen[found[0]] = entry
            return entry[0], found
        return None, found

    def hashed(self, paths: list[Path], found: tuple[str, int] | None) -> str:
        """`files_hash` of `paths`, read now; remembered under the status taken before the read."""
        started = time.time_ns()
        value = files_hash(paths)
        with self._lock:
            self.read += 1
        if found is not None:
            after = status(paths)
            if after is not None and after[0] == found[0]:  # unchanged while read
                self.seen[found[0]] = (value, started)
        return value


@contextmanager
def hashing_ahead(file_sets: list[list[Path]], cache: HashCache | None = None) -> Iterator[Digest]:
    """`files_hash`, with the given file sets hashed in advance, in order, on two background threads
    (hashlib and file reads release the GIL), so a workspace's records are hashed while its suites
    are parsed; a set `cache` knows unchanged is not read. A set not given in advance is hashed when
    asked for. On exit, sets never asked for and not yet started are dropped (a run with a broken
    manifest), and the threads are joined."""
    cache = cache if cache is not None else HashCache()
    pool = ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))
    ahead: dict[tuple[Path, ...], Future[str] | str] = {}
    try:
        for paths in file_sets:
            value, found = cache.cached(paths)
            ahead[tuple(paths)] = value if value is not None else pool.submit(cache.hashed, paths, found)

        def digest(paths: list[Path]) -> str:
            known = ahead.get(tuple(paths))
            if isinstance(known, str):
                return known
            if known is not None:
                return known.result()
            value, found = cache.cached(paths)
            return value if value is not None else cache.hashed(paths, found)

        yield digest
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
