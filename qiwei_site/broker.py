"""The embedded Celery broker: kombu's filesystem transport, made safe for concurrent processes.

kombu writes a message file in place and its reader moves and parses whatever it finds, so a
worker polling the folder can take a half-written file and die on the JSON (issue 11); its exchange
tables are rewritten in place the same way. Here every file appears under its final name only
when complete (written beside it under a hidden name, then ``os.replace``d), a reader claims a
message by renaming it inside the same folder (one winner, nothing lost to another filesystem),
and a file that still cannot be parsed is set aside instead of raising. The file names and format
are kombu's, so folders written by either transport stay readable by both.

``qiwei_site.celery`` registers this transport for the ``filesystem://`` scheme.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

# Hidden names (a leading dot): kombu's queue filter `name.partition(".")[2] == "<queue>.msg"`
# never matches them, so neither this reader nor kombu's own takes a file before it is complete.
_TMP_PREFIX = ".tmp-"
_CLAIM_PREFIX = ".claimed-"
# A writer or reader that left its hidden file this long ago was killed: drop the half-written
# message (its sender never returned), give the claimed one back to the queue (never delivered).
STALE_SECONDS = 30.0
_TABLE_READ_ATTEMPTS = 5
_UNREADABLE_GRACE_SECONDS = 2.0

Table = list[filesystem.exchange_queue_t]


def write_atomically(folder: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Create `folder/name` holding `data`; no reader ever sees it partly written."""
    tmp = os.path.join(folder, f"{_TMP_PREFIX}{time.time_ns()}-{uuid.uuid4().hex}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _hidden_age(name: str, prefix: str, now_ns: int) -> float | None:
    """Seconds since a hidden file was made (its name carries the time), or None if not one of ours."""
    stamp = name[len(prefix) :].split("-", 1)[0]
    return (now_ns - int(stamp)) / 1e9 if stamp.isdigit() else None


def _queue_order(name: str) -> tuple[int, str]:
    """FIFO by the millisecond stamp that leads a message name, compared as a number: as text,
    `1_…` sorts after `12…_…` and 999… after 1000…, so a queue read by name alone skips about."""
    stamp = name.split("_", 1)[0]
    return (int(stamp) if stamp.isdigit() else -1, name)


class Channel(filesystem.Channel):
    """Message files and exchange tables written atomically, claimed by rename, parsed defensively."""

    # --- messages ---------------------------------------------------------------------------
    # kombu's own channels disagree on this parameter's name (message / payload): keep the parent's.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        # kombu's name: milliseconds of the (system-wide) monotonic clock, so readers take FIFO order.
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        try:
            write_atomically(self.data_folder_out, name, str_to_bytes(dumps(payload)))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory {self.data_folder_out!r}") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        folder = self.data_folder_in
        wanted = f"{queue}.msg"
        try:
            names = sorted(os.listdir(folder), key=_queue_order)
        except OSError as exc:
            raise ChannelError(f"Cannot list queue directory {folder!r}") from exc
        now_ns = time.time_ns()
        for name in names:
            if name.startswith("."):
                self._recover_hidden(folder, name, now_ns)
                continue
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(folder, f"{_CLAIM_PREFIX}{now_ns}-{name}")
            try:
                os.rename(os.path.join(folder, name), claimed)
            except FileNotFoundError:  # another reader took it first
                continue
            except OSError as exc:
                raise ChannelError(f"Cannot take file {name!r} from queue directory {folder!r}") from exc
            try:
                with open(claimed, "rb") as handle:
                    data = handle.read()
                    written = os.fstat(handle.fileno()).st_mtime
            except OSError as exc:
                raise ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            try:
                payload = loads(bytes_to_str(data))
            except (ValueError, UnicodeDecodeError):
                self._unreadable(claimed, name, age=time.time() - written)
                continue
            self._dispose(claimed, name)
            return payload
        raise Empty()

    # kombu's, with a missing or unreadable folder reported as the broker error it is (a worker
    # reconnects on a ChannelError; a bare FileNotFoundError stops it).
    def _size(self, queue: str) -> int:
        try:
            return int(super()._size(queue))
        except OSError as exc:
            raise ChannelError(f"Cannot list queue directory {self.data_folder_in!r}") from exc

    def _purge(self, queue: str) -> int:
        try:
            return int(super()._purge(queue))
        except OSError as exc:
            raise ChannelError(f"Cannot list queue directory {self.data_folder_in!r}") from exc

    def _dispose(self, claimed: str, name: str) -> None:
        if self.store_processed:
            shutil.move(claimed, os.path.join(self.processed_folder, name))
        else:
            os.unlink(claimed)

    def _unreadable(self, claimed: str, name: str, *, age: float) -> None:
        """A file that does not parse: only an in-place writer (kombu's own transport, in a process
        not yet upgraded) or damage leaves one. A young one goes back for a later poll, as that
        writer may still be at it; an old one is set aside for inspection. Never raised."""
        if age < _UNREADABLE_GRACE_SECONDS:
            with contextlib.suppress(OSError):
                os.rename(claimed, os.path.join(os.path.dirname(claimed), name))
                return
        target = Path(self.corrupt_folder)
        try:
            target.mkdir(parents=True, exist_ok=True)
            os.replace(claimed, target / name)
            logger.warning("broker: unreadable message file %s moved to %s", name, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(claimed)
            logger.warning("broker: unreadable message file %s dropped", name)

    def _recover_hidden(self, folder: str, name: str, now_ns: int) -> None:
        if name.startswith(_TMP_PREFIX):
            age = _hidden_age(name, _TMP_PREFIX, now_ns)
            if age is not None and age > STALE_SECONDS:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
        elif name.startswith(_CLAIM_PREFIX):
            age = _hidden_age(name, _CLAIM_PREFIX, now_ns)
            if age is not None and age > STALE_SECONDS:
                original = name[len(_CLAIM_PREFIX) :].split("-", 1)[1]
                with contextlib.suppress(OSError):
                    os.rename(os.path.join(folder, name), os.path.join(folder, original))
                    logger.warning("broker: message %s claimed by a reader that died, queued again", original)

    # --- exchange tables (the control folder) ------------------------------------------------
    def get_table(self, exchange: str) -> Table:
        file = self._exchange_file(exchange)
        for attempt in range(_TABLE_READ_ATTEMPTS):
            try:
                data = file.read_bytes()
            except FileNotFoundError:
                return []
            except OSError as exc:
                raise ChannelError(f"Cannot open {file}") from exc
            try:
                return [filesystem.exchange_queue_t(*row) for row in loads(bytes_to_str(data))]
            except (ValueError, TypeError, UnicodeDecodeError):
                # Only an in-place writer (kombu's own transport in another process) leaves this.
                time.sleep(0.01 * (attempt + 1))
        raise ChannelError(f"Exchange table {file} is unreadable")

    def queue_bind(
        self, queue: str, exchange: str | None = None, routing_key: str = "", arguments: Any = None, **kwargs: Any
    ) -> None:
        super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)
        # kombu remembers a binding in process-wide state and then skips the table, but the table is
        # the folder's, which may be new (another data dir, a deleted broker folder): a publish would
        # find no route and the message would vanish without an error. Make sure the file holds it.
        exchange = exchange or "amq.direct"
        self._queue_bind(exchange, *self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments))

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def add(table: Table) -> Table | None:
            return None if binding in table else [binding, *table]

        self._update_table(exchange, add)

    def _delete(self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any) -> None:
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def remove(table: Table) -> Table | None:
            return [row for row in table if row != binding] if binding in table else None

        self._update_table(exchange, remove)

    def _update_table(self, exchange: str, change: Callable[[Table], Table | None]) -> None:
        """Read-modify-write one exchange table under an exclusive lock; readers need none."""
        file = self._exchange_file(exchange)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            with self._table_lock(file):
                table = change(self.get_table(exchange))
                if table is not None:
                    write_atomically(file.parent, file.name, str_to_bytes(dumps(table)))
        except OSError as exc:
            raise ChannelError(f"Cannot update {file}") from exc

    @staticmethod
    @contextlib.contextmanager
    def _table_lock(file: Path) -> Iterator[None]:
        with open(file.with_name(f".{file.name}.lock"), "a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @property
    def corrupt_folder(self) -> str:
        default = os.path.join(os.path.dirname(os.path.abspath(self.data_folder_in)), "corrupt")
        return str(self.transport_options.get("corrupt_folder", default))


class Transport(filesystem.Transport):
    """kombu's filesystem transport with the safe channel above."""

    Channel = Channel
