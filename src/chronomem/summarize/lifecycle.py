"""The session lifecycle: buffer while active, write long-term at the end, restore with memory.

:class:`SessionLifecycle` is the orchestration ``Memory`` delegates to in
buffered (server) mode:

- :meth:`~SessionLifecycle.add` buffers turns of an active session
  (sub-millisecond in Redis, idempotent by message id);
- :meth:`~SessionLifecycle.end` flushes the buffer to the long-term store
  (resumable: see :mod:`.buffer`), runs the caller's extraction hook, marks
  the session ended and folds it into the Rsum memory;
- :meth:`~SessionLifecycle.restore` returns the message list of a resumed
  session: the stored memory as a system message, then the turns still
  buffered;
- :meth:`~SessionLifecycle.recover` finishes flushes a crash interrupted.

Every step of :meth:`~SessionLifecycle.end` can be repeated: the flush is
idempotent, extraction runs on the store's not-yet-extracted turns, and the
Rsum update of an already checkpointed session recomputes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from ..errors import ValidationError
from ..model import Checkpoint, Message, Session
from ..providers.base import Messages
from ..timeutil import iso, parse_time, utcnow
from ..validation import check_id
from .buffer import SessionBuffer
from .compaction import memory_system_message
from .rsum import RsumMemory

__all__ = ["LifecycleStore", "SessionEnd", "SessionLifecycle", "turns_as_chat"]

log = logging.getLogger(__name__)

_CHAT_ROLES = frozenset({"user", "assistant", "system", "tool"})


class LifecycleStore(Protocol):
    def ensure_session(self, user_id: str, session_id: str, *, started_at: datetime | None = None,
                       agent_id: str | None = None) -> Any: ...

    def end_session(self, user_id: str, session_id: str, ended_at: datetime) -> None: ...

    def add_messages(self, user_id: str, messages: Sequence[Message]) -> list[Message]: ...

    def transaction(self, user_id: str) -> AbstractContextManager[None]: ...

    def messages(self, user_id: str, *, session_id: str | None = None) -> list[Message]: ...


@dataclass(slots=True)
class SessionEnd:
    """What :meth:`SessionLifecycle.end` did."""

    flushed: list[Message]  # turns handed to the long-term store by this call
    stored: list[Message]  # of those, the ones the store did not have yet
    checkpoint: Checkpoint | None  # the new Rsum memory M_i (None: the session had no turns)
    extraction: Any = None  # whatever the extraction hook returned
    ended: bool = True  # False: extraction failed for some turns, so the session stays open for a retry

    def report(self, session_id: str) -> dict[str, Any]:
        """What ending ``session_id`` did, as ``chronomem session end --json`` and the MCP tool say it."""
        return {"session_id": session_id, "turns_flushed": len(self.flushed), "turns_stored": len(self.stored),
                "summary": self.checkpoint.memory if self.checkpoint is not None else None}


def session_row(s: Session) -> dict[str, Any]:
    """A session as JSON: the keys of REST's ``GET /v1/users/{u}/sessions``, ``chronomem session list``
    and the MCP ``sessions`` tool."""
    return {"id": s.id, "started_at": iso(s.started_at), "ended_at": iso(s.ended_at), "agent_id": s.agent_id}


def turns_as_chat(turns: Iterable[Message]) -> Messages:
    """Buffered turns as OpenAI-shaped chat messages (``name`` keeps a speaker that is not a role)."""
    out: Messages = []
    for m in turns:
        if m.speaker in _CHAT_ROLES:
            out.append({"role": m.speaker, "content": m.text})
        else:
            out.append({"role": "user", "name": m.speaker, "content": m.text})
    return out


class SessionLifecycle:
    """Short-term buffer + long-term store + Rsum, for one application."""

    def __init__(
        self,
        store: LifecycleStore,
        buffer: SessionBuffer,
        rsum: RsumMemory | Callable[[], RsumMemory],
        *,
        extract: Callable[[str, str], Any] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """``extract(user_id, session_id)`` runs the write path over the session's unextracted turns.

        ``rsum`` may be a function that makes it, called when the summary is first needed: buffering and
        flushing need no chat model, so a memory without one (``llm=False``) still keeps its turns, and
        only :meth:`end` (after the flush) and :meth:`restore` raise its ConfigError."""
        self.store = store
        self.buffer = buffer
        self._rsum = rsum
        self.extract = extract
        self._clock = clock

    @property
    def rsum(self) -> RsumMemory:
        """The summary memory, made on first use when a function to make it was given."""
        if not isinstance(self._rsum, RsumMemory) and callable(self._rsum):
            self._rsum = self._rsum()
        return self._rsum

    def add(self, messages: Iterable[Message]) -> int:
        """Buffer turns of active sessions; returns how many were new."""
        return self.buffer.extend(messages)

    def end(self, user_id: str, session_id: str, *, ended_at: datetime | str | None = None) -> SessionEnd:
        """Flush, extract, mark ended and update the Rsum memory."""
        check_id("user_id", user_id)
        check_id("session_id", session_id)
        when = parse_time(ended_at, "ended_at") if ended_at is not None else self._clock()
        if ended_at is not None:  # checked before anything is flushed or extracted
            said = [m.timestamp for m in (*self.store.messages(user_id, session_id=session_id),
                                          *self.buffer.read(user_id, session_id))]
            if said and when < min(said):
                raise ValidationError("ended_at", iso(when), f"is before the session's first turn ({iso(min(said))})")
        stored: list[Message] = []
        flushed = self.flush(user_id, session_id, stored)
        extraction = self.extract(user_id, session_id) if self.extract is not None else None
        in_store = {m.id for m in self.store.messages(user_id, session_id=session_id)}
        flushed = [m for m in flushed if m.id in in_store]  # not the turns a racing forget discarded
        if in_store:
            self.store.ensure_session(user_id, session_id)  # a session never seen (or forgotten) gets no row
        checkpoint = self.rsum.update(user_id, session_id)
        # marked ended last: a session whose summary update or extraction failed stays open, so the
        # next end_session (or idle sweep) finds it and finishes the job
        failed = getattr(extraction, "failed_chunks", None)
        if failed:  # the reason, not the error: that may quote the turns (logs cannot be forgotten)
            log.warning("session %r of user %r not marked ended: extraction failed for %d chunk(s) (%s); the "
                        "next end_session or idle sweep retries them", session_id, user_id, len(failed),
                        getattr(failed[0], "reason", "") or "see the extraction result")
        else:
            self.store.end_session(user_id, session_id, when)
            log.info("session %r of user %r ended: %d turns flushed (%d new), memory seq %s", session_id, user_id,
                     len(flushed), len(stored), checkpoint.seq if checkpoint else None)
        return SessionEnd(flushed=flushed, stored=stored, checkpoint=checkpoint, extraction=extraction,
                          ended=not failed)

    def flush(self, user_id: str, session_id: str, stored: list[Message] | None = None) -> list[Message]:
        """Write the session's buffered turns to the store (pending extraction); returns the turns flushed,
        and adds those newly stored to ``stored``.  No model call: :meth:`end` goes on from here."""
        new: list[Message] = [] if stored is None else stored
        return self.buffer.flush(user_id, session_id, lambda batch: new.extend(self._write(user_id, batch)))

    def restore(self, user_id: str, session_id: str, *, instructions: str = "") -> Messages:
        """The messages to resume a session with: memory as a system message, then the buffered turns."""
        check_id("user_id", user_id)
        check_id("session_id", session_id)
        memory = self.rsum.summary(user_id)
        head = [memory_system_message(memory, instructions)] if (memory or instructions) else []
        return head + turns_as_chat(self.buffer.read(user_id, session_id))

    def recover(self, user_id: str) -> dict[str, int]:
        """Write the turns of flushes that a crash interrupted (they stay pending until written)."""
        check_id("user_id", user_id)
        return self.buffer.recover(user_id, lambda batch: self._write(user_id, batch))

    def _write(self, user_id: str, batch: list[Message]) -> list[Message]:
        """The long-term write of a flush: session rows, then the turns (idempotent by id).

        In the user's write transaction, which ``forget`` takes too, only the turns still pending in
        the buffer are written: a forget that discarded the session after the flush took its batch
        must not see the turns written back.
        """
        with self.store.transaction(user_id):
            alive = {sid: self.buffer.pending_ids(user_id, sid) for sid in {m.session_id for m in batch}}
            batch = [m for m in batch if m.id in alive[m.session_id]]
            for sid in dict.fromkeys(m.session_id for m in batch):
                turns = [m for m in batch if m.session_id == sid]
                stored = self.store.messages(user_id, session_id=sid)
                # numbered here, in the buffer's order, after the stored turns: two adds racing to the
                # buffer may have given their turns the same seq
                have, nxt = {m.id for m in stored}, max((m.seq for m in stored), default=-1) + 1
                for m in turns:
                    if m.id not in have:
                        m.seq, nxt = nxt, nxt + 1
                self.store.ensure_session(user_id, sid, started_at=min(m.timestamp for m in turns),
                                          agent_id=turns[0].agent_id)
            return self.store.add_messages(user_id, batch) if batch else []
