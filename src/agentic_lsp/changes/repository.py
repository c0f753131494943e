"""Changesets and accept records kept as JSON files, so review survives a server restart.

Layout under the directory the caller gives (the workspace cache dir)::

    changesets/<id>.json     one Changeset each
    accepts/<id>.json        one AcceptRecord each

Every save is an atomic file replace, so a crash never leaves a truncated record. One lock
serialises access within the process; the engine owning the workspace is the only writer.
A file that cannot be parsed is skipped by listings (and logged), never fatal.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agentic_lsp.changes.atomic import write_atomic
from agentic_lsp.changes.changeset import AcceptRecord, Changeset
from agentic_lsp.errors import ChangesetError

log = logging.getLogger(__name__)

_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_Model = TypeVar("_Model", bound=BaseModel)


class ChangesetRepository:
    """Persistent store of :class:`Changeset` and :class:`AcceptRecord` objects."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._changesets = self.directory / "changesets"
        self._accepts = self.directory / "accepts"
        self._lock = threading.RLock()
        self._changesets.mkdir(parents=True, exist_ok=True)
        self._accepts.mkdir(parents=True, exist_ok=True)

    def save(self, changeset: Changeset) -> None:
        with self._lock:
            self._write(self._changesets, changeset.id, changeset)

    def get(self, changeset_id: str) -> Changeset:
        """The changeset with this id; :class:`ChangesetError` when unknown or unreadable."""
        with self._lock:
            return self._read(self._changesets, changeset_id, Changeset, "changeset")

    def delete(self, changeset_id: str) -> None:
        with self._lock:
            (self._changesets / f"{_checked(changeset_id)}.json").unlink(missing_ok=True)

    def save_accept(self, record: AcceptRecord) -> None:
        with self._lock:
            self._write(self._accepts, record.id, record)

    def get_accept(self, record_id: str) -> AcceptRecord:
        with self._lock:
            return self._read(self._accepts, record_id, AcceptRecord, "accept record")

    def accepts(self, changeset_id: str | None = None) -> list[AcceptRecord]:
        """Accept records, oldest first, optionally of one changeset."""
        with self._lock:
            found = [
                record
                for record in self._load_all(self._accepts, AcceptRecord)
                if changeset_id is None or record.changeset_id == changeset_id
            ]
        return sorted(found, key=lambda record: (record.created, record.id))

    def last_accept(self, changeset_id: str | None = None) -> AcceptRecord | None:
        """The newest accept not yet rolled back (of one changeset, or of any)."""
        live = [record for record in self.accepts(changeset_id) if not record.rolled_back]
        return live[-1] if live else None

    # Defined after the methods annotated with the builtin ``list``, which it would shadow.
    def list(self, run_id: str | None = None, status: str | None = None) -> list[Changeset]:
        """Changesets, oldest first, optionally only one run's or one status."""
        with self._lock:
            found = [
                cs
                for cs in self._load_all(self._changesets, Changeset)
                if (run_id is None or cs.run_id == run_id)
                and (status is None or cs.status == status)
            ]
        return sorted(found, key=lambda cs: (cs.created, cs.id))

    def _write(self, folder: Path, item_id: str, model: BaseModel) -> None:
        data = model.model_dump_json(indent=1).encode("utf-8")
        write_atomic(folder / f"{_checked(item_id)}.json", data)

    def _read(self, folder: Path, item_id: str, model: type[_Model], what: str) -> _Model:
        path = folder / f"{_checked(item_id)}.json"
        try:
            return model.model_validate_json(path.read_bytes())
        except FileNotFoundError as exc:
            raise ChangesetError(f"no {what} {item_id!r}", "list them to see valid ids") from exc
        except (OSError, ValidationError, ValueError) as exc:
            raise ChangesetError(
                f"{what} {item_id!r} cannot be read: {exc}", f"delete {path} if it is damaged"
            ) from exc

    def _load_all(self, folder: Path, model: type[_Model]) -> Iterator[_Model]:
        for path in folder.glob("*.json"):
            try:
                yield model.model_validate_json(path.read_bytes())
            except (OSError, ValidationError, ValueError) as exc:
                log.warning("skipping unreadable %s: %s", path, exc)


def _checked(item_id: str) -> str:
    if not _ID.match(item_id):
        raise ChangesetError(f"invalid id {item_id!r}", "ids are letters, digits, - and _")
    return item_id
