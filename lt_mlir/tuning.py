"""The tuning database: the best schedule found for a program, target and host.

``lt-tune`` and ``Tensor.optimize`` record their winner here;
``lt.set_default_schedule("tuned")`` reads it back.  One SQLite file
(``path()``): ``$LT_MLIR_TUNING_DB`` if set, else
``$XDG_CACHE_HOME/lt_mlir/tuning.sqlite`` (``~/.cache`` by default).

An entry is keyed by the program (``program_hash``: the sha256 of the
start module printed without locations), the target's name and the host
(``host()``: LLVM's CPU name, its features, the core count), since a
schedule's speed holds for those three only.  ``record`` keeps the entry
with the higher speedup over the start.  Speedups from different runs are
over the same start on the same host, so they compare, within the noise of
two measurements: a later run that measures a slightly lower speedup for
an equally good schedule leaves the older entry in place.

Each write is one transaction (``BEGIN IMMEDIATE``) and every connection
waits for a lock (``TIMEOUT_S``), so two searches finishing together do
not lose or corrupt each other's entries.  A file that is not such a
database is an ``LtError`` naming it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass

from .errors import LtError
from .lowering.machine import cpu_target
from .schedule import Schedule

SCHEMA_VERSION = 1  # PRAGMA user_version of a tuning database
TIMEOUT_S = 30.0  # how long a connection waits for another writer's lock

_COLUMNS = ("program", "target", "host", "cpu", "schedule", "pipeline", "speedup", "gflops", "evaluations",
            "strategy", "seconds", "recorded")
_SCHEMA = """
CREATE TABLE tuned (
    program TEXT NOT NULL, target TEXT NOT NULL, host TEXT NOT NULL, cpu TEXT NOT NULL,
    schedule TEXT NOT NULL, pipeline TEXT NOT NULL, speedup REAL NOT NULL, gflops REAL,
    evaluations INTEGER NOT NULL, strategy TEXT NOT NULL, seconds REAL NOT NULL, recorded REAL NOT NULL,
    PRIMARY KEY (program, target, host)
)
"""


@dataclass(frozen=True)
class Entry:
    program: str  # sha256 of the start module printed without locations
    target: str
    host: str  # host_key(): cpu, cores, features
    cpu: str
    schedule: str  # the best schedule's module (Schedule.file_text)
    pipeline: str  # its moves from the start (lt-opt -p)
    speedup: float  # over the start, as the search measured it
    gflops: float | None
    evaluations: int
    strategy: str
    seconds: float  # the search's length
    recorded: float  # when (seconds since the epoch)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(self.recorded))


def path() -> str:
    """The database file: ``$LT_MLIR_TUNING_DB``, else the user's cache folder."""
    override = os.environ.get("LT_MLIR_TUNING_DB")
    if override:
        return os.path.expanduser(override)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "lt_mlir", "tuning.sqlite")


def program_hash(start: Schedule | str, variant: str = "") -> str:
    """sha256 of the module printed without locations: the same program
    whichever file or spelling it came from.  ``variant``: what else the
    entry's schedule holds for, mixed into the hash (an imported model's
    default schedule, which its searches start from: a schedule tuned
    against an older default is not looked up once the default changes)."""
    if isinstance(start, Schedule):
        digest = hashlib.sha256(start.file_text.encode()).hexdigest()
    else:
        digest = _text_hash(start)
    return digest if not variant else hashlib.sha256(f"{digest}|{variant}".encode()).hexdigest()


@functools.lru_cache(maxsize=256)
def _text_hash(text: str) -> str:
    return program_hash(Schedule(text))  # parsed once per text: the frontend asks at every lowering


def host() -> dict:
    """This machine as timings depend on it: LLVM's CPU name, its features, the cores."""
    cpu = cpu_target()
    return {"cpu": cpu.cpu, "features": ",".join(sorted(f for f in cpu.features.split(",") if f)), "cores": os.cpu_count()}


def host_key(h: dict | None = None) -> str:
    """``host()`` as one string, the database's key."""
    h = h or host()
    return f"{h['cpu']};{h['cores']};{h['features']}"


def record(start_text: str, target: str, schedule_text: str, pipeline: str, speedup: float, gflops: float | None = None,
           evaluations: int = 0, strategy: str = "", seconds: float = 0.0, variant: str = "") -> Entry:
    """Record a search's winner for ``start_text`` (and ``variant``, see
    ``program_hash``) on ``target`` and this host, unless the database
    holds one with a speedup at least as high.  Returns the entry the
    database holds afterwards."""
    h = host()
    new = Entry(program_hash(start_text, variant), target, host_key(h), h["cpu"], schedule_text, pipeline, float(speedup),
                None if gflops is None else float(gflops), int(evaluations), strategy, float(seconds), time.time())
    with _connect(create=True) as db:
        db.execute("BEGIN IMMEDIATE")  # the read and the write are one transaction
        old = _select(db, "WHERE program = ? AND target = ? AND host = ?", (new.program, new.target, new.host))
        if old and old[0].speedup >= new.speedup:
            db.execute("COMMIT")
            return old[0]
        db.execute(f"INSERT OR REPLACE INTO tuned ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                   tuple(getattr(new, c) for c in _COLUMNS))
        db.execute("COMMIT")
    return new


def lookup(start_text: str, target: str, variant: str = "") -> Entry | None:
    """The entry for ``start_text`` (and ``variant``) on ``target`` and this host, if any."""
    if not os.path.exists(path()):
        return None
    key = (program_hash(start_text, variant), target, host_key())
    with _connect() as db:
        found = _select(db, "WHERE program = ? AND target = ? AND host = ?", key) if db else []
    return found[0] if found else None


def entries() -> list[Entry]:
    """Every entry, of every host, the newest first."""
    if not os.path.exists(path()):
        return []
    with _connect() as db:
        return _select(db, "ORDER BY recorded DESC", ()) if db else []


def check() -> None:
    """Make the database, or check that the file is one (a search calls
    this before it starts, so that a bad file costs no search)."""
    with _connect(create=True):
        pass


def _select(db, where: str, args: tuple) -> list[Entry]:
    rows = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM tuned {where}", args).fetchall()
    return [Entry(*row) for row in rows]


@contextlib.contextmanager
def _connect(create: bool = False):
    """A connection to a checked database (its table made when ``create``;
    without, an empty file gives None); any SQLite or file-system failure
    becomes one LtError naming the file."""
    file = path()
    db = None
    try:
        if create:
            os.makedirs(os.path.dirname(os.path.abspath(file)), exist_ok=True)
        db = sqlite3.connect(file, timeout=TIMEOUT_S, isolation_level=None)  # transactions are explicit
        yield db if _check_schema(db, file, create) else None
    except sqlite3.Error as e:
        if db is not None and db.in_transaction:
            db.rollback()
        raise LtError(f"error: cannot use the tuning database '{file}': {e} "
                      "(remove the file, or set LT_MLIR_TUNING_DB to another)") from None
    except OSError as e:
        raise LtError(f"error: cannot use the tuning database '{file}': {e.strerror or e}") from None
    finally:
        if db is not None:
            db.close()


def _check_schema(db, file: str, create: bool) -> bool:
    """Whether the database has its table (made when ``create``); a
    database of something else is refused."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return True
    if version == 0 and not db.execute("SELECT name FROM sqlite_master").fetchall():
        if create:
            db.execute("BEGIN IMMEDIATE")
            if db.execute("PRAGMA user_version").fetchone()[0] == 0:  # another writer may have made it meanwhile
                db.execute(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
            return True
        return False
    raise LtError(f"error: '{file}' is not an lt_mlir tuning database (schema {version}); "
                  "remove it, or set LT_MLIR_TUNING_DB to another file")
