"""SQLite, once: a connection that can load sqlite-vec, in WAL mode.

Which SQLite: the standard library's `sqlite3` when it can load extensions, else
`pysqlite3` (the `pysqlite3-binary` wheel bundles a recent SQLite that can). Many Python
builds (macOS system Python, some pyenv builds, this machine) lack
`enable_load_extension`, so the fallback is the common case, not the exception.

sqlite-vec is loaded from the `sqlite_vec` package's folder *without importing the
package*: its `__init__` pulls in numpy (~100 ms), which the search CLI cannot afford.

Every database autopoiesis keeps (memory.db, the embedding cache, the LLM response
cache, the extraction state) opens here, in WAL mode with a busy timeout, so readers
never block a writer and concurrent writers wait instead of failing.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class SQLiteInfo:
    """What `autopoiesis doctor` reports about the SQLite in use."""

    module: str  # "sqlite3" or "pysqlite3"
    sqlite_version: str
    sqlite_vec_loaded: bool
    sqlite_vec_version: str | None
    error: str | None = None


def sqlite_vec_path() -> str | None:
    """Path of the sqlite-vec loadable extension (no suffix), found without importing numpy."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _can_load_extensions(module: ModuleType) -> bool:
    return hasattr(module.Connection, "enable_load_extension")


def sqlite_module() -> ModuleType:
    """The DB-API module to use: stdlib when it can load extensions, else pysqlite3."""
    import sqlite3

    if _can_load_extensions(sqlite3):
        return sqlite3
    try:
        import pysqlite3.dbapi2 as pysqlite3
    except ImportError:
        return sqlite3  # no extensions at all: search falls back to in-memory cosine
    return pysqlite3


def _load_vec(conn: Any) -> tuple[bool, str | None, str | None]:
    path = sqlite_vec_path()
    if path is None:
        return False, None, "the sqlite-vec package is not installed (pip install sqlite-vec)"
    if not hasattr(conn, "enable_load_extension"):
        return (
            False,
            None,
            "this Python's sqlite3 cannot load extensions and pysqlite3-binary is not installed",
        )
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(path)
        finally:
            conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        return True, version, None
    except Exception as exc:  # a wrong-architecture binary, a locked-down SQLite, ...
        return False, None, f"sqlite-vec did not load: {exc}"


def connect(path: str | os.PathLike[str], *, timeout: float = 30.0) -> tuple[Any, SQLiteInfo]:
    """Open PATH with sqlite-vec loaded when possible. WAL lets searches read while a
    (background) sync writes; busy_timeout makes concurrent writers wait, not fail."""
    module = sqlite_module()
    conn = module.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    loaded, version, error = _load_vec(conn)
    info = SQLiteInfo(
        module="pysqlite3" if module.__name__.startswith("pysqlite3") else "sqlite3",
        sqlite_version=module.sqlite_version,
        sqlite_vec_loaded=loaded,
        sqlite_vec_version=version,
        error=error,
    )
    return conn, info


def probe_info() -> SQLiteInfo:
    """SQLite facts for `doctor`, from an in-memory database."""
    conn, info = connect(":memory:")
    conn.close()
    return info


def open_db(path: str | os.PathLike[str], *, timeout: float = 30.0, vec: bool = False) -> Any:
    """A connection to PATH in WAL mode (autocommit; use BEGIN for transactions), with
    sqlite-vec loaded when VEC and possible. A database its folder does not let us write
    (a read-only file system, a folder not ours) is an OSError that says so, as any
    other file the CLI cannot write, not SQLite's "unable to open database file"."""
    module = sqlite_module()
    try:
        if vec:
            conn, _ = connect(path, timeout=timeout)
        else:
            conn = module.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        conn.execute("PRAGMA journal_mode=WAL")
    except module.OperationalError as exc:
        from autopoiesis.core.paths import unwritable

        refused = unwritable(path)
        if refused is not None:
            raise refused from exc
        raise
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_database(path: str | os.PathLike[str]) -> bool:
    """Whether PATH is an SQLite database file (by its first bytes)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def open_readonly(path: str | os.PathLike[str], *, timeout: float = 5.0) -> Any:
    """A read-only connection to PATH, a database another program keeps (a harness's
    sessions): it never writes to it and never changes its journal mode, and waits a
    moment while that program writes."""
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    conn = sqlite_module().connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    conn.execute("PRAGMA query_only=1")
    return conn


def database_tables(path: str | os.PathLike[str]) -> set[str]:
    """The table names of the database at PATH, read-only; empty when it cannot be read."""
    try:
        conn = open_readonly(path)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            conn.close()
    except Exception:
        return set()
