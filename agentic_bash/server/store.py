"""The sessions service's store: one SQLite table (stdlib sqlite3, WAL), safe across threads."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["SessionRow", "SessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id            TEXT PRIMARY KEY,
    status        TEXT NOT NULL,          -- running | expired | deleted | crashed | stopped
    options       TEXT NOT NULL,          -- JSON: what the client asked for
    ttl           REAL NOT NULL,
    created_at    REAL NOT NULL,
    last_activity REAL NOT NULL,
    expires_at    REAL NOT NULL,
    snapshot      TEXT,                   -- path of the last snapshot taken, if any
    reason        TEXT,                   -- why it is not running
    instance      TEXT NOT NULL           -- the server process that ran it
);
CREATE INDEX IF NOT EXISTS sessions_status ON sessions(status, expires_at);
"""


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    status: str
    options: dict[str, Any]
    ttl: float
    created_at: float
    last_activity: float
    expires_at: float
    snapshot: str | None
    reason: str | None
    instance: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "options": self.options, "ttl": self.ttl,
                "created_at": self.created_at, "last_activity": self.last_activity,
                "expires_at": self.expires_at, "reason": self.reason,
                "restorable": self.snapshot is not None}


class SessionStore:
    """Rows of sessions; every method is one short transaction under one lock."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)

    @staticmethod
    def _row(r: tuple[Any, ...]) -> SessionRow:
        return SessionRow(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], r[7], r[8], r[9])

    def insert(self, sid: str, options: dict[str, Any], ttl: float, instance: str) -> SessionRow:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions VALUES (?, 'running', ?, ?, ?, ?, ?, NULL, NULL, ?)",
                (sid, json.dumps(options), ttl, now, now, now + ttl, instance))
        return self.get(sid)  # type: ignore[return-value]

    def get(self, sid: str) -> SessionRow | None:
        with self._lock:
            r = self._db.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchone()
        return self._row(r) if r else None

    def list(self, status: str | None = None) -> list[SessionRow]:
        with self._lock:
            if status is None:
                rows = self._db.execute("SELECT * FROM sessions ORDER BY created_at").fetchall()
            else:
                rows = self._db.execute("SELECT * FROM sessions WHERE status = ? ORDER BY created_at",
                                        (status,)).fetchall()
        return [self._row(r) for r in rows]

    def touch(self, sid: str) -> None:
        """Activity: the lease runs ``ttl`` seconds from now."""
        now = time.time()
        with self._lock:
            self._db.execute("UPDATE sessions SET last_activity = ?, expires_at = ? + ttl "
                             "WHERE id = ? AND status = 'running'", (now, now, sid))

    def set_status(self, sid: str, status: str, reason: str | None = None) -> None:
        with self._lock:
            self._db.execute("UPDATE sessions SET status = ?, reason = ? WHERE id = ?",
                             (status, reason, sid))

    def set_snapshot(self, sid: str, path: str | None) -> None:
        with self._lock:
            self._db.execute("UPDATE sessions SET snapshot = ? WHERE id = ?", (path, sid))

    def expired(self, now: float) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT id FROM sessions WHERE status = 'running' AND expires_at < ?",
                                    (now,)).fetchall()
        return [r[0] for r in rows]

    def orphans(self, instance: str) -> list[SessionRow]:
        """Rows marked running by another server process (whose sandboxes died with it)."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM sessions WHERE status = 'running' AND instance != ?",
                                    (instance,)).fetchall()
        return [self._row(r) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
