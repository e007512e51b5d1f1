"""Writing files so that a fault never leaves one half-written.

Every file flake8-mha writes (a fixed source or notebook, a report, a cache
entry) goes through :func:`write_bytes`:

1. the bytes go to a temporary file in the same folder as the target
   (``.NAME.XXXXXXXX.flake8-mha-tmp``: not a ``.py`` file, so no run ever
   lints it), which is flushed and fsynced;
2. it gets the target's permission bits (and owner, where allowed);
3. ``os.replace`` puts it in place in one step, and the folder is fsynced.

A kill, a full disk or an I/O error before step 3 leaves the target exactly as
it was; any failure this process sees removes the temporary file (SIGKILL
cannot be seen: then a ``*.flake8-mha-tmp`` file stays behind, and the target
is intact). A symlink is written through: its target is replaced, the link
stays a link. The bytes are written as given: the caller keeps the encoding,
the BOM and the line endings.

``expected`` turns the write into a compare-and-swap: the target is replaced
only if its bytes are still ``expected`` (those that were analysed);
otherwise :class:`FileChanged` is raised and nothing is written. Between
processes of flake8-mha the compare and the replace hold an exclusive
``flock`` on the folder, so two ``--fix`` runs cannot both pass the compare;
an editor does not take that lock, so against an editor the window left is
the time of one read and one rename.

Reading goes through :func:`read_regular`: only a regular file is read (a
FIFO would block forever, ``/dev/zero`` would never end), and only up to a
size limit, refused by the file's size before a byte is read.

This module is a core layer: it imports nothing from the package.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from typing import Iterable, Optional

try:  # POSIX; elsewhere the compare-and-swap runs without the folder lock
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

TMP_SUFFIX = ".flake8-mha-tmp"


class WriteError(OSError):
    """A write that did not happen; ``str()`` is one line for the user."""

    def __init__(self, message: str, errno_: Optional[int] = None):
        super().__init__(errno_ or 0, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class FileChanged(WriteError):
    """The file's bytes are no longer those that were analysed."""


NOT_REGULAR = "not a regular file"


class NotRegular(OSError):
    """A path that is not a regular file (a FIFO, a device, a socket, a folder)."""

    def __str__(self) -> str:
        return NOT_REGULAR


class TooLarge(OSError):
    """A regular file over the size limit; ``size`` is its size in bytes."""

    def __init__(self, size: int, limit: int):
        super().__init__(errno.EFBIG, f"larger than {_mib(limit)}, not read")
        self.size, self.limit = size, limit

    def __str__(self) -> str:
        return self.strerror


def _mib(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes.

    Raises :class:`NotRegular` or :class:`TooLarge` (both ``OSError``), or the
    ``OSError`` of the open.  Never blocks on a FIFO (it is opened
    non-blocking, then refused by ``fstat``), never reads past ``limit``
    (a file that grows while it is read is refused too)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:  # a socket cannot be opened at all: say what it is
        if not regular_file(path) and os.path.exists(path):
            raise NotRegular(errno.EINVAL, "not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file")
        if st.st_size > limit:
            raise TooLarge(st.st_size, limit)
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise TooLarge(len(data), limit)
        return data
    finally:
        os.close(fd)


def walked_file(path: str, notice=None) -> bool:
    """Whether a file found inside a folder is to be linted: anything but a
    FIFO, a device or a socket (a FIFO would block the run, a link to
    ``/dev/zero`` never ends), which is skipped with a one-line notice on
    stderr (``notice``: where else to write it).  A path that cannot be
    stat'ed (a link loop, a dangling link) is kept: reading it reports why.
    A path named on the command line is not asked: it is read, and refused."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return True
    if stat.S_ISREG(mode):
        return True
    if notice is None:
        import sys

        notice = sys.stderr.write
    notice(f"{os.path.normpath(path)}: skipped: {NOT_REGULAR}\n")
    return False


def regular_file(path: str) -> bool:
    """Whether ``path`` (followed through symlinks) is a regular file."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022  # the common default; os.umask() to read it is not thread-safe


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


class _FolderLock:
    """An exclusive flock on a folder, between flake8-mha processes."""

    def __init__(self, folder: str):
        self.folder = folder
        self.fd: Optional[int] = None

    def __enter__(self) -> "_FolderLock":
        if fcntl is not None:
            try:
                self.fd = os.open(self.folder, os.O_RDONLY)
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            except OSError:  # a folder that cannot be opened or locked: no lock
                self.__exit__()
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock
            self.fd = None


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems cannot fsync a folder; the data is already synced
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_bytes(path: str, data: bytes, expected: Optional[bytes] = None) -> None:
    """Put ``data`` at ``path`` atomically; raise :class:`WriteError` (its text is
    the reason, one line, without the path).

    With ``expected``, write only if the file still holds exactly those bytes
    (:class:`FileChanged` otherwise). Without it, a missing file is created
    (folders included) with the mode ``open()`` would give it.
    """
    try:
        st: Optional[os.stat_result] = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteError(_reason(exc), exc.errno) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(path, data)  # /dev/stdout, a FIFO: nothing to replace
        return
    target = os.path.realpath(path)  # write through symlinks; the link stays
    folder = os.path.dirname(target) or "."
    if st is None:
        if expected is not None:
            raise FileChanged("the file was removed after it was read")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise WriteError(f"cannot create the folder: {_reason(exc)}", exc.errno) from None
    else:
        _probe_writable(path, target)
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    tmp = None
    try:
        try:
            fd, tmp = tempfile.mkstemp(
                prefix="." + os.path.basename(target) + ".", suffix=TMP_SUFFIX, dir=folder
            )
        except OSError as exc:
            raise WriteError(
                f"cannot create a file in its folder ({_reason(exc)})", exc.errno
            ) from None
        try:
            _write_all(fd, data)
            os.fsync(fd)
            if hasattr(os, "fchmod"):  # POSIX (Windows has no mode bits to keep)
                os.fchmod(fd, mode)
            if st is not None and hasattr(os, "fchown"):
                _keep_owner(fd, st)
        finally:
            os.close(fd)
        with _FolderLock(folder):
            if expected is not None:
                current = _read(target)
                if current is None:
                    raise FileChanged("the file was removed after it was read")
                if current != expected:
                    raise FileChanged("the file changed after it was read (run again)")
            os.replace(tmp, target)
            tmp = None
        _fsync_folder(folder)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(_reason(exc), exc.errno) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_text(path: str, text: str, encoding: str = "utf-8") -> None:
    """A report: ``text`` encoded as is (no newline translation), written atomically."""
    write_bytes(path, text.encode(encoding))


def _probe_writable(path: str, target: str) -> None:
    """Refuse what ``open(path, "wb")`` would refuse (a read-only or immutable
    file), without changing it: replacing would otherwise succeed where the
    user said no."""
    try:
        os.close(os.open(target, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        what = (
            f"the file is read-only ({_reason(exc)})"
            if exc.errno in (errno.EACCES, errno.EPERM)
            else _reason(exc)
        )
        raise WriteError(what, exc.errno) from None


def _keep_owner(fd: int, st: os.stat_result) -> None:
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:  # only root may give a file away; the mode is kept all the same
            pass


def _write_in_place(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise WriteError(_reason(exc), exc.errno) from None


def new_codes(before: Iterable, fixed: Iterable, after: Iterable) -> list:
    """The codes the fixed text has more of than it should: ``before`` minus
    what was ``fixed``, compared with ``after`` (findings or codes)."""
    from collections import Counter

    def code(f) -> str:
        return getattr(f, "code", f)

    left = Counter(code(f) for f in before)
    left.subtract(Counter(code(f) for f in fixed))
    extra = Counter(code(f) for f in after)
    extra.subtract(left)
    return sorted(c for c, n in extra.items() if n > 0)


def fix_refusal(before: Iterable, fixed: Iterable, after: Iterable) -> Optional[str]:
    """Why a fix must not be written (it adds a finding), or None."""
    extra = new_codes(before, fixed, after)
    if extra:
        return f"fix not applied: the fixed text has a new finding ({', '.join(extra)})"
    return None
