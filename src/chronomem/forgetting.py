"""Forgetting for real: a fact, a session (its turns, facts and summaries) or a whole user.

Nothing forgotten stays in search indexes, vectors or the session buffer (turns of an
active session that wait there, in process or in Redis, for ``end_session``: left
behind, they would be written back when the session ends).  Forgetting a
correction forgets the versions it replaced (:func:`replaced_versions`).  A fact other turns
said too loses the forgotten turns' statements (:func:`~chronomem.unsaying.unsay`): a fact that
a forgotten turn ended in place ("we had to rehome Pixel") holds again, a start only they said
moves to the next one said, and a fact only endings are left of gives way to them, planned again
by the update rules.  Facts that a forgotten
fact had closed hold again, as if it had never been said (the graph writer
replays the update rules over them).  A name or alias that only the
forgotten turns used goes: an entity that other turns still name by another
spelling takes that one.  ``Memory.forget`` validates its
arguments and delegates to :func:`forget`.

Rsum summaries written after a forgotten session were written from it too.  Their texts are
erased in the forget's transaction (:func:`~chronomem.summarize.rsum.erase_after_gap`), so
nothing it said outlives the call; rewriting them without it takes one model call per later
session (a user's oldest of 300 sessions: 299 calls, an hour on a small local model), so that is
owed to a job (``schedule``) rather than done before the call returns.  Until it has run,
summaries read the one from before the forgotten session (:func:`~chronomem.summarize.rsum.first_gap`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import logging
from typing import TYPE_CHECKING

from .errors import NotFoundError, ValidationError, log_reason
from .model import Fact, Origin
from .unsaying import unsay

if TYPE_CHECKING:
    from .graph import GraphWriter
    from .jobs.model import Job
    from .summarize.buffer import SessionBuffer
    from .store.base import Store
    from .summarize.rsum import RsumMemory

__all__ = ["ForgetResult", "forget", "replaced_versions"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ForgetResult:
    """What one :func:`forget` deleted and repaired."""

    facts_deleted: int = 0
    messages_deleted: int = 0  # stored turns and turns still waiting in the session buffer
    sessions_deleted: int = 0
    entities_deleted: int = 0
    entities_renamed: int = 0  # entities whose name only the forgotten turns said: they take another spelling
    reopened: int = 0  # facts that a forgotten fact had closed, or a forgotten turn ended, and hold again
    rejoined: int = 0  # stints of one fact a forgotten value kept apart, folded into the first again
    summaries_rebuilt: int = 0  # Rsum checkpoints recomputed without the forgotten session in this call
    summaries_pending: int = 0  # later summaries erased and waiting for their rewrite (by ``job_id``)
    job_id: str | None = None  # the job rewriting them: Memory.job / wait, GET /v1/jobs/{job_id}
    cache_entries_deleted: int = 0  # model replies and vectors of the user dropped from the opt-in caches
    warnings: list[str] = field(default_factory=list)


def session_held(store: Store, user_id: str, session_id: str, *, has_turns: bool | None = None,
                 buffered: bool = False) -> bool:
    """Whether the user holds the session: a stored turn (``has_turns``, when the caller has read them),
    turns waiting in the session buffer (``buffered``), a fact of it (``add_facts(session_id=…)``) or its
    row.  The cheap reads first: the row is found by reading the user's sessions, which only a session
    that is not there needs.  :func:`forget` refuses what it does not hold, and REST will not end it."""
    if buffered:
        return True
    if has_turns is None:
        has_turns = bool(store.messages(user_id, session_id=session_id, limit=1))
    return (has_turns or bool(store.facts(user_id, session_id=session_id, limit=1))
            or any(s.id == session_id for s in store.sessions(user_id)))


def forget(store: Store, graph: GraphWriter, rsum: Callable[[], RsumMemory], *, user_id: str,
           fact_id: str | None = None, session_id: str | None = None,
           everything: bool = False, buffer: SessionBuffer | None = None,
           schedule: Callable[[int], Job] | None = None) -> ForgetResult:
    """Delete one of: the fact ``fact_id``, the session ``session_id``, or (``everything``) the user.

    Summaries written after a forgotten session are erased at once and owed a rewrite:
    ``schedule(pending)`` is called inside the delete's transaction and returns the job that will
    do it (stored in that transaction, so it commits with the gap it closes; the caller delivers it).
    Without ``schedule`` they are rewritten here, before returning: ``rsum`` is called then (it may
    load the chat model).  ``buffer``: the memory's
    session buffer, whose waiting turns of the session (or of every session of
    the user) are dropped first, so a failure of the store afterwards leaves
    nothing that a later ``end_session`` could write back.  Raises
    :class:`~chronomem.errors.ValidationError` unless exactly one target is
    given, :class:`~chronomem.errors.NotFoundError` for an unknown one.
    """
    chosen = [x for x in (fact_id is not None, session_id is not None, everything) if x]
    if len(chosen) != 1:
        raise ValidationError("forget", {"fact_id": fact_id, "session_id": session_id,
                                         "everything": everything},
                              "give exactly one of fact_id, session_id or everything=True")
    res = ForgetResult()
    buffered: dict[str, int] = {}  # session id -> turns dropped from the buffer
    if buffer is not None and (everything or session_id is not None):
        for sid in [session_id] if session_id is not None else buffer.active_sessions(user_id):
            buffered[sid] = buffer.discard(user_id, sid)
    with store.transaction(user_id):
        if everything:
            stored_sessions = {s.id for s in store.sessions(user_id)}
            res.facts_deleted = store.count_facts(user_id)
            res.messages_deleted = len(store.messages(user_id)) + sum(buffered.values())
            res.sessions_deleted = len(stored_sessions | {s for s, n in buffered.items() if n})
            res.entities_deleted = len(store.entities(user_id))
            store.delete_user(user_id)
            return res
        doomed: list[Fact]
        replayed: list[Fact] = []  # facts whose start or end moved, or that hold again
        replanned: list[Fact] = []  # the endings left of facts whose start only forgotten turns said
        if fact_id is not None:
            doomed = store.facts(user_id, ids=[fact_id])
            if not doomed:
                raise NotFoundError(f"user {user_id!r} has no fact {fact_id!r}")
            doomed += replaced_versions(store, user_id, doomed[0])
        else:
            assert session_id is not None  # exactly one target was given
            msgs = store.messages(user_id, session_id=session_id)
            if not session_held(store, user_id, session_id, has_turns=bool(msgs),
                                buffered=bool(sum(buffered.values()))):
                raise NotFoundError(f"user {user_id!r} has no session {session_id!r}")
            msg_ids = {m.id for m in msgs}
            doomed, trimmed, moved, reworded = [], [], [], []
            for f in store.facts(user_id):
                # a fact goes with its turns; one without turns (add_facts(session_id=…)) with its session.
                # A fact another session's turns said too stays, as that session told it
                if set(f.source_ids) <= msg_ids if f.source_ids else f.session_id == session_id:
                    doomed.append(f)
                elif msg_ids & set(f.source_ids) or f.session_id == session_id:
                    # first said in the forgotten session (the statement said there may have gone to another
                    # fact): now told in the session of its first turn left
                    if f.session_id == session_id:
                        moved.append(f)
                    if not msg_ids & set(f.source_ids):
                        trimmed.append(f)
                        continue
                    unsaid = unsay(f, msg_ids, graph.theta)
                    if unsaid.reworded:  # what was made of its old words goes: its vector, job results
                        reworded.append(f.id)
                    if unsaid.endings:  # the fact goes; the endings said of it are planned again in its place
                        doomed.append(f)
                        replanned += unsaid.endings
                        continue
                    if unsaid.replay:  # its start or end moved, or it holds again: its slot is replayed below
                        replayed.append(f)
                    trimmed.append(f)
            if moved or replanned:
                told = {m.id: m.session_id for m in store.messages(
                    user_id, ids=[f.source_ids[0] for f in [*moved, *replanned] if f.source_ids])}
                for f in moved:
                    f.session_id = told.get(f.source_ids[0])
                for f in replanned:  # told in the session of its turns; one said without turns, in its fact's
                    f.session_id = told.get(f.source_ids[0]) if f.source_ids else (
                        None if f.session_id == session_id else f.session_id)
            store.update_facts(user_id, trimmed)
            store.drop_fact_copies(user_id, reworded)
            res.messages_deleted = len(msgs) + sum(buffered.values())
            res.sessions_deleted = 1
        doomed_ids = {f.id for f in doomed}
        touched = {x for f in doomed for x in (f.subject_id, f.object_id) if x is not None}
        doomed_relations = {f.relation for f in doomed}
        # what a forgotten fact closed reopens; a start inferred beside it is inferred again, and so is the
        # place of a stint with no start (an ending a forgotten stint cut short without closing it)
        affected = [f for f in store.facts(user_id, touching=list(touched)) if f.id not in doomed_ids and (
            f.closed_by in doomed_ids or ((f.start_guessed or f.valid_from is None)
                                          and f.relation in doomed_relations))] + replayed
        res.facts_deleted = store.delete_facts(user_id, sorted(doomed_ids))
        res.reopened = len(graph.rebuild(user_id, affected))
        if replanned:  # before the session's names go: a name only it said is replaced in these too
            kept = {f.id for f in graph.replan(user_id, replanned).added} & doomed_ids
            res.facts_deleted -= len(kept)  # an ending that stands alone keeps its fact's id
        # "Lisbon", "Porto", "Lisbon again" with Porto forgotten: one Lisbon fact, as if Porto had never been said
        res.rejoined = graph.rejoin(user_id, [*affected, *replanned])
        if session_id is not None:
            from .summarize.rsum import erase_after_gap  # the summaries' module, on first use as elsewhere

            res.entities_renamed = len(store.delete_session(user_id, session_id))
            # later summaries were written from the forgotten session too: their words go now
            res.summaries_pending = erase_after_gap(store, user_id)
            if res.summaries_pending and schedule is not None:
                res.job_id = schedule(res.summaries_pending).id
        res.entities_deleted = store.delete_orphan_entities(user_id)
    if res.summaries_pending and schedule is None:
        _rewrite_now(rsum, user_id, res)
    return res


def _rewrite_now(rsum: Callable[[], RsumMemory], user_id: str, res: ForgetResult) -> None:
    """Rewrite the erased summaries after a forgotten session before returning (``forget(wait=True)``).
    The delete has committed: a failure is reported in ``res.warnings``, and the summaries stay where a
    job, the next ``end_session`` or ``Memory.rewrite_summaries`` take them up."""
    try:
        res.summaries_rebuilt = len(rsum().replay(user_id))
        res.summaries_pending = 0
    except Exception as e:  # noqa: BLE001 - until the rewrite, summaries stop before the forgotten session
        log.warning("user %r: replaying the summaries after a forgotten session failed: %s", user_id,
                    log_reason(e))
        res.warnings.append(f"the session is deleted; rewriting the later summaries without it failed ({e}). "
                            "Their texts are erased: until they are rewritten, summary() reads the one before "
                            "it; the next end_session, or mem.rewrite_summaries(user_id=…), rewrites them")


def replaced_versions(store: Store, user_id: str, fact: Fact) -> list[Fact]:
    """The versions ``fact`` replaced by correction, back to the first one said.

    :meth:`~chronomem.Memory.correct` keeps the corrected version in the history, closed by
    its correction with confidence 0: forgetting the correction forgets those versions too,
    or the wrong spelling of what the user asked to forget would stay behind.
    """
    out: list[Fact] = []
    frontier = [fact]
    while frontier:
        ids = [f.id for f in frontier if f.origin is Origin.CORRECTED]
        frontier = [f for f in store.facts(user_id, closed_by=ids) if f.confidence == 0.0] if ids else []
        out += frontier
    return out
