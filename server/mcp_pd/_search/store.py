"""Tool vectors kept on disk, so a process spawned per conversation ranks with vectors from its first search.

Hosts such as Claude Desktop and Cursor start a stdio server per conversation; without this every process would
re-embed its whole catalog (seconds to minutes) and answer with lexical ranking meanwhile. One SQLite file holds
the vectors of every catalog and model this user served: a row per (model id, SHA-256 of the text embedded), so
the key is the content, never a path, and a new or edited definition is the only one embedded again. SQLite
because several processes read and write the file at once (WAL, a busy timeout) and a crash mid-write leaves the
last committed state.

Failure never takes search down: a file that cannot be opened, read or written is logged once and the store turns
itself off (the index then embeds in memory, as without a store). Rows whose length does not match their
dimension, or that are not unit vectors, are ignored. Knows texts and vectors; nothing of tools or sessions.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["VectorStore", "default_cache_dir", "text_key"]

logger = logging.getLogger("mcp_pd.search")

FILENAME: Final = "vectors-v1.sqlite3"
# Rows kept at most; past it the least recently written go (about 1.5 KB a row at 384 dimensions: ~750 MB).
MAX_ROWS: Final = 500_000
_CHUNK: Final = 500  # keys per SELECT (SQLite's default limit on bound parameters is 999 on old builds)


def text_key(text: str) -> str:
    """The content key of a text to embed (its SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    """`$MCP_PD_CACHE_DIR`, else the platform's user cache directory (`~/.cache/mcp-pd` on Linux)."""
    override = os.environ.get("MCP_PD_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("mcp-pd", appauthor=False))


class VectorStore:
    """Unit vectors by (model id, text key) in `<directory>/vectors-v1.sqlite3`; thread- and process-safe.

    `load` and `save` never raise for I/O: on the first failure the store logs why and is off from then on
    (`available` says so), which costs embedding time, never an answer.
    """

    def __init__(self, directory: str | Path, *, max_rows: int = MAX_ROWS) -> None:
        self.directory = Path(directory).expanduser()
        self.path = self.directory / FILENAME
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._failed: str | None = None

    @classmethod
    def default(cls) -> VectorStore:
        """The store in the user's cache directory (see `default_cache_dir`)."""
        return cls(default_cache_dir())

    @classmethod
    def resolve(cls, where: str | Path | None) -> VectorStore | None:
        """`"default"`: the user's cache directory; a path: that directory; None: no store."""
        if where is None:
            return None
        return cls.default() if where == "default" else cls(where)

    @property
    def available(self) -> bool:
        return self._failed is None

    def __repr__(self) -> str:
        state = "" if self._failed is None else f", off: {self._failed}"
        return f"VectorStore({str(self.path)!r}{state})"

    def _connect(self) -> sqlite3.Connection | None:
        if self._failed is not None:
            return None
        if self._conn is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key TEXT NOT NULL, dim INTEGER NOT NULL,"
                    " data BLOB NOT NULL, written REAL NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID"
                )
                self._conn = conn
            except (sqlite3.Error, OSError) as exc:
                self._fail(f"cannot open {self.path}: {exc}")
                return None
        return self._conn

    def _fail(self, why: str) -> None:
        if self._failed is None:
            self._failed = why
            logger.warning("vector cache off (vectors are embedded in memory instead): %s", why)
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):  # already broken; nothing more to release
                self._conn.close()
            self._conn = None

    def load(self, model: str, keys: Iterable[str]) -> dict[str, Any]:
        """The stored vectors of `model` among `keys` (key -> float32 row); missing keys are absent."""
        import numpy as np

        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._lock:
            conn = self._connect()
            if conn is None or not wanted:
                return found
            try:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT key, dim, data FROM vectors WHERE model = ? AND key IN ({marks})", (model, *chunk)
                    ).fetchall()
                    for key, dim, data in rows:
                        if not isinstance(data, bytes) or len(data) != 4 * dim or dim < 1:
                            continue
                        row = np.frombuffer(data, dtype="<f4").astype(np.float32)
                        norm = float(np.linalg.norm(row))
                        if abs(norm - 1.0) < 1e-3:  # a damaged row is embedded again, never ranked with
                            found[key] = row
            except sqlite3.Error as exc:
                self._fail(f"cannot read {self.path}: {exc}")
                return {}
        return found

    def save(self, model: str, vectors: Mapping[str, Any]) -> int:
        """Store `vectors` (key -> unit float32 row) for `model`; returns how many rows were written."""
        import numpy as np

        if not vectors:
            return 0
        now = time.time()
        rows = []
        for key, vector in vectors.items():
            row = np.asarray(vector, dtype="<f4")
            rows.append((model, key, int(row.shape[0]), row.tobytes(), now))
        with self._lock:
            conn = self._connect()
            if conn is None:
                return 0
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
                (count,) = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()
                if count > self.max_rows:
                    conn.execute(
                        "DELETE FROM vectors WHERE (model, key) IN "
                        "(SELECT model, key FROM vectors ORDER BY written LIMIT ?)",
                        (count - self.max_rows,),
                    )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):  # it may not have started; the failure below says why
                    conn.execute("ROLLBACK")
                self._fail(f"cannot write {self.path}: {exc}")
                return 0
        return len(rows)

    def present(self, model: str, keys: Iterable[str]) -> int:
        """How many of `keys` have a vector of `model` stored (without reading the vectors)."""
        wanted = list(dict.fromkeys(keys))
        found = 0
        with self._lock:
            conn = self._connect()
            if conn is None:
                return 0
            try:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    (n,) = conn.execute(
                        f"SELECT COUNT(*) FROM vectors WHERE model = ? AND key IN ({marks})", (model, *chunk)
                    ).fetchone()
                    found += int(n)
            except sqlite3.Error as exc:
                self._fail(f"cannot read {self.path}: {exc}")
                return 0
        return found

    def count(self, model: str | None = None) -> int:
        """Rows stored (for one model, or all)."""
        with self._lock:
            conn = self._connect()
            if conn is None:
                return 0
            try:
                if model is None:
                    (n,) = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()
                else:
                    (n,) = conn.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", (model,)).fetchone()
            except sqlite3.Error as exc:
                self._fail(f"cannot read {self.path}: {exc}")
                return 0
        return int(n)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
