"""Account database connections, bounded per process whatever the number of accounts (issue 13).

Django keeps one connection per thread per database alias, for CONN_MAX_AGE seconds. With one
database per account that is threads × accounts touched: a few dozen busy accounts exhaust a
PostgreSQL server's `max_connections`. Instead, PostgreSQL account connections live in one pool
per process, shared by every thread and every account, holding at most `QIWEI_ACCOUNT_CONN_CAP`
connections (in use and idle together):

- The account backend (`connections.postgresql`: Django's own with two methods replaced) takes a
  connection from the pool instead of opening one, and gives it back instead of closing it when
  it is released. A connection handed back idle belongs to no thread, so the pool may close it
  from any thread: that is how the least recently used one is closed when another account needs
  a slot. Django forbids closing another thread's connection; nothing here ever does.
- A thread releases its account connection when it leaves the outermost `use_account()` of that
  account, at the end of each request (`request_finished`) and of each Celery task
  (`task_postrun`), never inside a transaction and never while the account is still selected
  (`tenancy.py`). Any other close() closes for real.
- When every slot is in use, the thread first releases what it holds and no longer uses, then
  waits up to `QIWEI_ACCOUNT_CONN_WAIT_SECONDS` for a connection to come back, then fails as an
  unavailable database (a 503 with Retry-After on the API).
- A connection is kept at most `QIWEI_DB_CONN_MAX_AGE` seconds from its opening (idle or not,
  as Django's CONN_MAX_AGE did; each renewed somewhere in the last fifth of that, so connections
  opened together are not all renewed at once); one whose server hung up is dropped at checkout,
  before anyone uses it.

SQLite accounts are not pooled (no server to run out of): each thread keeps its most recently
used ones open, at most the cap (`tenancy.account_connection_release`, `connections.sqlite3`).
`QIWEI_ACCOUNT_CONN_CAP=0` switches all of this off: Django's per-thread connections, as before.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

PoolKey = tuple[str, ...]

# Raw connections inherited across a fork: never used and never garbage-collected in the child,
# because closing one would end the parent's server session on the shared socket.
_orphans: list[Any] = []


class ConnectionCapReached(Exception):
    """Raised inside a backend's connect when no slot frees up in time (wrapped as a driver error)."""


class _MustReclaim(Exception):
    pass


def is_cap_error(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, ConnectionCapReached):
            return True
        exc = exc.__cause__
    return False


# Set by tenancy: releases the calling thread's account connections it is done with, except the
# alias it is opening. Called by a checkout about to wait for a slot.
_reclaim: Callable[[str], int] | None = None


def set_reclaimer(reclaim: Callable[[str], int]) -> None:
    global _reclaim
    _reclaim = reclaim


@dataclass
class _Idle:
    key: PoolKey
    raw: Any
    since: float


@dataclass(frozen=True)
class PoolStats:
    open: int
    idle: int
    in_use: int
    peak: int
    cap: int
    opened: int  # connections opened since the start (or the last reset_peak)
    evicted: int  # idle connections closed to make room for another account
    waits: int  # checkouts that had to wait for a connection to come back


def pool_enabled() -> bool:
    return int(getattr(settings, "QIWEI_ACCOUNT_CONN_CAP", 0)) > 0


def is_pooled_alias(alias: str) -> bool:
    return alias.startswith("acct_") and not alias.endswith("__template")


class AccountConnectionPool:
    """Idle account connections of this process in least-recently-used order, and the count of
    every account connection it has handed out. All state is behind one condition variable."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._idle: OrderedDict[int, _Idle] = OrderedDict()  # oldest first
        self._idle_by_key: dict[PoolKey, list[int]] = {}
        self._out: dict[int, weakref.finalize] = {}  # checked-out raw connections, by id
        self._lost_ids: deque[int] = deque()
        self._open = 0
        self._peak = 0
        self._opened = 0
        self._evicted = 0
        self._waits = 0

    # --- the two operations the backends use -----------------------------------------------

    def checkout(
        self, key: PoolKey, connect: Callable[[], Any], alive: Callable[[Any], bool], affinity: str | None = None
    ) -> Any:
        """An idle connection for `key` that is still alive, or a new one once a slot is free.
        `affinity` (the schema layout: the account's alias) prefers an idle connection that has
        served that account before: its server backend has the schema's catalogue cached."""
        deadline: float | None = None
        reclaimed = False
        while True:
            stale: list[Any] = []
            try:
                with self._cond:
                    entry, deadline = self._idle_or_slot(key, stale, deadline, may_wait=reclaimed, affinity=affinity)
            except _MustReclaim:
                # Before waiting on other threads, give back what this thread holds and no longer
                # uses (a loop that opened accounts without releasing them would wait on itself).
                reclaimed = True
                if _reclaim is not None:
                    _reclaim(affinity or key[0])  # never the alias being opened
                continue
            finally:
                _close_quietly(stale)
            if entry is None:
                try:
                    raw = connect()
                except BaseException:
                    self._give_back_slot()
                    raise
                self._track(raw, new=True)
                return raw
            if alive(entry.raw):
                self._track(entry.raw, new=False)
                return entry.raw
            _close_quietly([entry.raw])
            self._give_back_slot()

    def checkin(self, key: PoolKey, raw: Any, *, keep: bool, reusable: bool) -> None:
        """Take back a connection: idle for the next checkout, or closed (and its slot freed)."""
        with self._cond:
            finalizer = self._out.pop(id(raw), None)
            if finalizer is None:
                # Not handed out by this process's pool (inherited across a fork): leave it alone.
                _orphans.append(raw)
                return
            finalizer.detach()
            # Kept at most QIWEI_DB_CONN_MAX_AGE seconds from its opening, as Django's CONN_MAX_AGE
            # did: a busy connection is renewed too (a moved database, a bloated backend).
            young = time.monotonic() - _born.get(id(raw), 0.0) < _max_idle_seconds()
            if keep and reusable and young:
                self._idle[id(raw)] = _Idle(key=key, raw=raw, since=time.monotonic())
                self._idle_by_key.setdefault(key, []).append(id(raw))
                self._cond.notify()
                return
        _close_quietly([raw])
        self._give_back_slot()

    # --- housekeeping --------------------------------------------------------------------------

    def discard(self, alias: str) -> int:
        """Close every idle connection of one account (its database moved, was dropped, or a loop
        over all accounts is done with it)."""
        with self._cond:
            victims = [ident for ident, entry in self._idle.items() if entry.key[0] == alias]
            closing = [self._remove_idle(ident).raw for ident in victims]
            self._open -= len(closing)
            self._cond.notify_all()
        _close_quietly(closing)
        return len(closing)

    def close_idle(self) -> int:
        with self._cond:
            closing = [self._remove_idle(ident).raw for ident in list(self._idle)]
            self._open -= len(closing)
            self._cond.notify_all()
        _close_quietly(closing)
        return len(closing)

    def stats(self) -> PoolStats:
        with self._cond:
            self._reap_lost()
            idle = len(self._idle)
            return PoolStats(
                open=self._open,
                idle=idle,
                in_use=self._open - idle,
                peak=self._peak,
                cap=_cap(),
                opened=self._opened,
                evicted=self._evicted,
                waits=self._waits,
            )

    def reset_peak(self) -> None:
        with self._cond:
            self._peak = self._open
            self._opened = self._evicted = self._waits = 0

    def after_fork_in_child(self) -> None:
        """The child starts with an empty pool; the parent's connections are kept, unused."""
        _orphans.extend(entry.raw for entry in self._idle.values())
        for finalizer in self._out.values():
            finalizer.detach()
        self.__init__()  # type: ignore[misc]

    # --- internals (called with the condition held) --------------------------------------------

    def _idle_or_slot(
        self, key: PoolKey, stale: list[Any], deadline: float | None, *, may_wait: bool, affinity: str | None = None
    ) -> tuple[_Idle | None, float | None]:
        """This key's idle connection, or None with a slot reserved for a new one: the least
        recently used idle connection of another account is closed to make room, and when every
        slot is in use we wait for one to come back (and look for an idle one of ours again)."""
        while True:
            self._reap_lost()
            self._prune(stale)
            entry = self._take_idle(key, affinity, spread=self._open < _cap())
            if entry is not None:
                return entry, deadline
            if self._open < _cap():
                self._open += 1
                self._opened += 1
                self._peak = max(self._peak, self._open)
                return None, deadline
            if self._idle:
                stale.append(self._remove_idle(next(iter(self._idle))).raw)
                self._open -= 1
                self._evicted += 1
                continue
            if not may_wait:
                raise _MustReclaim
            now = time.monotonic()
            if deadline is None:
                self._waits += 1
                deadline = now + float(getattr(settings, "QIWEI_ACCOUNT_CONN_WAIT_SECONDS", 5))
            if now >= deadline:
                raise ConnectionCapReached(
                    f"账号数据库连接已达上限 {_cap()}，等待空闲连接超时 "
                    f"(all {_cap()} account connections of this process are in use)."
                )
            self._cond.wait(deadline - now)

    def _take_idle(self, key: PoolKey, affinity: str | None = None, *, spread: bool = False) -> _Idle | None:
        idents = self._idle_by_key.get(key)
        if not idents:
            return None
        if affinity is None:
            return self._remove_idle(idents[-1])  # the most recently returned: the warmest
        # One pool for every account's schema: the most recent idle connection that served this
        # account (or has served none yet); else, below the cap (`spread`), none, so that the
        # caller opens one; else the one that has served the fewest schemas. Accounts so settle on
        # connections of their own, spread over every slot of the cap: each backend keeps
        # accounts / cap schemas' catalogue warm and stays under QIWEI_PG_SCHEMAS_PER_CONNECTION,
        # instead of the few connections a process's concurrency needs each meeting every account
        # and being recycled at the limit (a first use of a schema costs its backend ~2-3 ms of CPU
        # per request; benchmarks/RESULTS.md §22).
        for ident in reversed(idents):
            if affinity in _served.get(ident, ()):
                return self._remove_idle(ident)
        for ident in reversed(idents):
            if not _served.get(ident):
                return self._remove_idle(ident)
        if spread:
            return None
        return self._remove_idle(min(reversed(idents), key=lambda ident: len(_served.get(ident, ()))))

    def _remove_idle(self, ident: int) -> _Idle:
        entry = self._idle.pop(ident)
        idents = self._idle_by_key[entry.key]
        idents.remove(ident)
        if not idents:
            del self._idle_by_key[entry.key]
        return entry

    def _prune(self, stale: list[Any]) -> None:
        limit = time.monotonic() - _max_idle_seconds()
        while self._idle:
            oldest = next(iter(self._idle))
            if self._idle[oldest].since > limit:
                break
            stale.append(self._remove_idle(oldest).raw)
            self._open -= 1

    def _give_back_slot(self) -> None:
        with self._cond:
            self._open -= 1
            self._cond.notify()

    def _track(self, raw: Any, *, new: bool) -> None:
        _leases[id(raw)] = _leases.get(id(raw), 0) + 1  # a new lease: older cursors on it are void
        # A thread that dies holding a connection never hands it back: its slot is freed when the
        # connection object is collected.
        finalizer = weakref.finalize(raw, self._lost, id(raw))
        finalizer.atexit = False
        with self._cond:
            # Connections lost so far first: a new one may have been given a lost one's id.
            self._reap_lost()
            if new:
                # Aged by up to LIFETIME_SPREAD of its lifetime at birth: connections opened together
                # (a worker's start, a burst) are renewed over a spell, not in one stall where every
                # new backend also re-reads its schemas' catalogue.
                _born[id(raw)] = time.monotonic() - random.uniform(0, LIFETIME_SPREAD) * _max_idle_seconds()
                _served.pop(id(raw), None)  # a lost connection's id, given to this new one
            self._out[id(raw)] = finalizer

    def _lost(self, ident: int) -> None:
        # Runs inside garbage collection, possibly while this thread holds the condition: only a
        # thread-safe append here, the bookkeeping happens at the next checkout.
        self._lost_ids.append(ident)

    def _reap_lost(self) -> None:
        while self._lost_ids:
            ident = self._lost_ids.popleft()
            if self._out.pop(ident, None) is not None:
                _born.pop(ident, None)
                _served.pop(ident, None)
                self._open -= 1


# The share of QIWEI_DB_CONN_MAX_AGE by which a connection's renewal may come early (see _track).
LIFETIME_SPREAD = 0.2


def _cap() -> int:
    return int(getattr(settings, "QIWEI_ACCOUNT_CONN_CAP", 0))


def _max_idle_seconds() -> float:
    return float(getattr(settings, "QIWEI_DB_CONN_MAX_AGE", 60))


def _close_quietly(raws: list[Any]) -> None:
    for raw in raws:
        _born.pop(id(raw), None)
        _served.pop(id(raw), None)
        _leases.pop(id(raw), None)
        with contextlib.suppress(Exception):
            raw.close()


# When each connection this process's pool opened was opened, by id (a driver connection may
# take no attribute of ours). Entries go with the connection's close, or with its collection.
_born: dict[int, float] = {}
# The account schemas each connection has served (the schema layout), by id: the catalogue cache
# of its server backend grows with each.
_served: dict[int, set[str]] = {}
# How many times each connection has been handed out, by id: a cursor remembers the lease it was
# made under and refuses to run once its connection serves another checkout (another account).
_leases: dict[int, int] = {}


def lease_of(raw: Any) -> int:
    return _leases.get(id(raw), 0)


def schemas_served(raw: Any) -> set[str]:
    return _served.setdefault(id(raw), set())


def socket_is_quiet(fileno: int) -> bool:
    """True when nothing is waiting to be read on an idle connection's socket. An idle server
    never speaks first; readable means it hung up (restart, pg_terminate_backend, idle timeout,
    PgBouncer gone) or sent an error we would otherwise read as the answer to our next query."""
    # poll, not select: select refuses descriptors from 1024 up, and a busy threaded worker has them.
    try:
        poller = select.poll()
        poller.register(fileno, select.POLLIN | select.POLLERR | select.POLLHUP)
        events = poller.poll(0)
    except (OSError, ValueError):
        return False
    return not events


account_pool = AccountConnectionPool()
os.register_at_fork(after_in_child=account_pool.after_fork_in_child)


def account_pool_stats() -> PoolStats:
    return account_pool.stats()
