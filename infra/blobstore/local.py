"""Blobs as files under one root directory, for a single machine and for development.

Every put goes to a temp file beside its target and is published with `os.replace`, so a reader
sees the old file or the new one and a put that dies leaves nothing. Temp names contain `~`,
which no key segment may, so they can never be mistaken for (or collide with) a blob.

A blob's file is named with `os.path` strings, never a `pathlib.Path`: pathlib interns every part of a path it
parses, and a key's parts are request-unique (session ids, handles), so each request would add strings to the
table CPython keeps of every module's identifiers, and a busy moment can make that table double, stepping a worker's
RSS up hours into its life (`bench/profiles/interned.py`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from infra.blobstore.base import (
    DEFAULT_READ_BLOCK,
    check_block_size,
    clip_range,
    is_valid_segment,
    source_size,
    unlink_quietly,
    validate_key,
    validate_prefix,
)
from infra.errors import BackendUnavailable, BlobNotFound, InvalidKey

_MISSING = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
_COPY_BLOCK = 1 << 20


class LocalBlobStore:
    """Blob `a/b/c` is the file `<root>/a/b/c`; reads seek, so ranges cost what they return."""

    def __init__(
        self, root: str | os.PathLike[str], *, fsync: bool = False, read_block: int = DEFAULT_READ_BLOCK
    ) -> None:
        self.root = Path(root).resolve()
        self._root = str(self.root)
        self.fsync = fsync
        self.read_block = check_block_size(read_block, DEFAULT_READ_BLOCK)
        with _os_errors(self._root):
            os.makedirs(self._root, exist_ok=True)

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def path_for(self, key: str) -> str:
        """The file behind `key`; refuses keys that resolve outside the root (e.g. via a symlink)."""
        path = os.path.join(self._root, *validate_key(key).split("/"))
        if os.path.commonpath((os.path.realpath(path), self._root)) != self._root:
            raise InvalidKey(f"blob key {key!r} resolves outside the store root", key=key)
        return path

    # --- writes -------------------------------------------------------------------------------

    def put_stream(self, key: str, blocks: Iterable[bytes]) -> int:
        path = self.path_for(key)
        return self._write_atomically(path, lambda out: _copy_blocks(blocks, out, path))

    def put_bytes(self, key: str, data: bytes) -> int:
        return self.put_stream(key, [data])

    def put_file(self, key: str, path: str | os.PathLike[str]) -> int:
        """Rename the spooled file into place (no copy); copy only when it lives on another device."""
        source, target = os.fspath(path), self.path_for(key)
        size = source_size(source)
        self._make_parent(target)
        if self.fsync:
            _fsync_path(source)
        try:
            os.replace(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise _translate_os_error(exc, target) from exc
            self._write_atomically(target, lambda out: _copy_file(source, out, target))
        return size

    def _write_atomically(self, path: str, write: Callable[[BinaryIO], int]) -> int:
        """Write via a sibling temp file and `os.replace`; any failure removes the temp file."""
        self._make_parent(path)
        folder, name = os.path.split(path)
        with _os_errors(path):
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}~", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                written = write(out)
                self._flush(out, path)
            with _os_errors(path):
                os.replace(tmp, path)
        except BaseException:
            unlink_quietly(tmp)
            raise
        return written

    def _flush(self, out: BinaryIO, path: str) -> None:
        with _os_errors(path):
            out.flush()
            if self.fsync:
                os.fsync(out.fileno())

    def _make_parent(self, path: str) -> None:
        with _os_errors(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)

    # --- reads --------------------------------------------------------------------------------

    def _open(self, key: str) -> BinaryIO:
        path = self.path_for(key)
        try:
            return open(path, "rb")
        except _MISSING as exc:
            raise BlobNotFound(f"no blob stored under {key!r}", key=key) from exc

    def size(self, key: str) -> int:
        path = self.path_for(key)
        try:
            info = os.stat(path)
        except _MISSING as exc:
            raise BlobNotFound(f"no blob stored under {key!r}", key=key) from exc
        if not stat.S_ISREG(info.st_mode):
            raise BlobNotFound(f"no blob stored under {key!r} (it is a directory)", key=key)
        return info.st_size

    def exists(self, key: str) -> bool:
        return os.path.isfile(self.path_for(key))

    def get_bytes(self, key: str) -> bytes:
        with self._open(key) as handle:
            return handle.read()

    def read_range(self, key: str, start: int, end: int) -> bytes:
        with self._open(key) as handle:
            start, end = clip_range(start, end, os.fstat(handle.fileno()).st_size)
            handle.seek(start)
            return handle.read(end - start)

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int | None = None
    ) -> Iterator[bytes]:
        """Open now (so a missing key fails here) and stream from that open file.

        The open file keeps its inode, so a concurrent overwrite cannot mix two versions.
        """
        block = check_block_size(block_size, self.read_block)
        handle = self._open(key)
        try:
            start, end = clip_range(start, end, os.fstat(handle.fileno()).st_size)
        except BaseException:
            handle.close()
            raise
        return _stream(handle, start, end, block)

    # --- deletes & health ---------------------------------------------------------------------

    def delete(self, key: str) -> None:
        path = self.path_for(key)
        if os.path.isdir(path):
            return  # a prefix, not a blob; some systems would answer EPERM rather than EISDIR
        try:
            os.unlink(path)
        except _MISSING:
            pass
        except OSError as exc:
            raise _translate_os_error(exc, path) from exc

    def delete_prefix(self, prefix: str) -> int:
        """Only the directory holding the prefix's last segment is listed, never the whole root.

        Temp files under the prefix are swept too: a session being deleted has no writer left
        worth protecting, and one that crashed would otherwise leave them forever.
        """
        head, _, partial = validate_prefix(prefix).rpartition("/")
        base = self.path_for(head) if head else self._root
        try:
            entries = [entry for entry in os.scandir(base) if entry.name.startswith(partial)]
        except _MISSING:
            return 0
        count = sum(_remove_entry(entry) for entry in entries)
        if head and not partial:
            _rmdir_quietly(base)
        return count

    def ping(self) -> None:
        if not self.root.is_dir() or not os.access(self.root, os.W_OK | os.X_OK):
            raise BackendUnavailable(f"blob root {self.root} is missing or not writable", root=str(self.root))


def _copy_blocks(blocks: Iterable[bytes], out: BinaryIO, path: str) -> int:
    """Exceptions from `blocks` are the caller's and pass through untouched; write errors are ours."""
    written = 0
    for block in blocks:
        with _os_errors(path):
            written += out.write(block)
    return written


def _copy_file(source: str, out: BinaryIO, path: str) -> int:
    with _os_errors(source), open(source, "rb") as src:
        return _copy_blocks(iter(lambda: src.read(_COPY_BLOCK), b""), out, path)


def _stream(handle: BinaryIO, start: int, end: int, block: int) -> Iterator[bytes]:
    with handle:
        handle.seek(start)
        position = start
        while position < end:
            data = handle.read(min(block, end - position))
            if not data:
                return
            position += len(data)
            yield data


def _fsync_path(path: str) -> None:
    with _os_errors(path), open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _remove_entry(entry: os.DirEntry[str]) -> int:
    """Delete a file or a whole subtree; temp files go too (a writer that died left them) but do not count."""
    if not entry.is_dir(follow_symlinks=False):
        unlink_quietly(entry.path)
        return int(is_valid_segment(entry.name))
    count = 0
    for folder, _dirs, files in os.walk(entry.path, topdown=False):
        for name in files:
            unlink_quietly(os.path.join(folder, name))
            count += is_valid_segment(name)
        _rmdir_quietly(folder)
    return count


def _rmdir_quietly(path: str) -> None:
    """A concurrent put may have just created a file here; leaving the directory is then right."""
    with contextlib.suppress(OSError):
        os.rmdir(path)


@contextmanager
def _os_errors(path: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _translate_os_error(exc, path) from exc


def _translate_os_error(exc: OSError, path: str) -> Exception:
    """Shape clashes (a blob where a directory must go) are the caller's; the rest is the disk's."""
    if isinstance(exc, (NotADirectoryError, IsADirectoryError, FileExistsError)):
        return InvalidKey(f"blob path {path} collides with an existing blob or directory", path=str(path))
    return BackendUnavailable(f"local blob store failed at {path}: {exc.strerror or exc}", path=str(path))
