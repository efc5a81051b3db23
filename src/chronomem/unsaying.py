"""What forgetting some turns leaves of a fact they told only in part, as pure functions.

A fact is told by statements, each with its turns: the first (which gave its start, and its end when it
said one), repetitions (:attr:`~chronomem.model.Fact.confirmations`), a start said after it was known
(``started_by``), an ending (``ended_by``), later starts and ends (``later_starts``, ``later_ends``) and the
words of each.  :func:`unsay` takes the forgotten turns' statements out of one fact, so that what is left
reads as if they had never been said: a start or an end only they gave goes (to the next one still said,
if any), and a fact that only endings are left of gives way to those endings, planned again by the update
rules (:func:`chronomem.forgetting.forget` does the writing and the replaying).

A repetition that says its fact's start again records it (``started_by``) when it says no end, or repeats the
ending that ended the fact; one that says the start and the same end as the fact's own statement records
neither, so the end stays.  Known limit: a fact stored before repetitions recorded their starts (session 51)
cannot tell a statement left that said the same start: its start stays, and so does an end the forgotten
statement gave with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .entities import new_id
from .model import Fact, Origin
from .temporal import first_statement, replaced_by_correction, unconfirm, unsay_words, words_turns

__all__ = ["Unsaid", "endings_of", "start_said_by", "unsay"]


@dataclass(slots=True)
class Unsaid:
    """What :func:`unsay` did to a fact besides trimming it."""

    replay: bool = False  # its start or end moved: its slot is placed in time order again
    reworded: bool = False  # words went or moved: what quoted the old ones (vectors, job results) goes
    # not empty: only these endings are left of the fact; it goes and they are planned again in its place
    endings: list[Fact] = field(default_factory=list)


def unsay(f: Fact, forgotten: set[str], theta: float) -> Unsaid:
    """Take the statements of ``forgotten`` turns out of ``f``, a fact other turns said too.  Mutates ``f``.

    * Its turns, its confirmations (the confidence refolded from the rest), later dates and words said only
      there go; the others lose those turns.
    * An end only they said goes: the first later end still said is the end, else the fact is open again
      (the end its own first statement gave stays when nothing else says one, unless another statement left
      said the start alone: ``started_by``).
    * A start only they said (:func:`start_said_by`) goes when each statement left is a later start or an
      ending: the earliest later start is the start, else the fact is only its endings (``endings``).
      Otherwise (a statement left may have said the same start) the start stays.
    """
    gave_start = start_said_by(f)
    start_unsaid = (bool(gave_start) and set(gave_start) <= forgotten and f.valid_from is not None
                    and not f.start_guessed and f.origin is not Origin.CORRECTED and not replaced_by_correction(f))
    first = first_statement(f)
    own_end_unsaid = not f.ended_by and f.stated_to is not None and bool(first) and set(first) <= forgotten
    end_unsaid = bool(f.ended_by) and set(f.ended_by) <= forgotten
    # the statements left, each by its turns still said
    left = [set(ids) - forgotten for _, ids in f.confirmations if not ids or not set(ids) <= forgotten]
    out = Unsaid()
    f.source_ids, f.ended_by, f.started_by = ([i for i in ids if i not in forgotten]
                                              for ids in (f.source_ids, f.ended_by, f.started_by))
    worded = bool(f.text) and _worded_by(f, forgotten)  # its words were the forgotten turns'
    if worded:
        f.text, f.text_from = "", []
    # the words of its other statements said only there go too; the oldest left takes the place of its own
    out.reworded = unsay_words(f, forgotten) or worded
    unconfirm(f, forgotten, theta)  # a repetition's raise goes with its turns, and so do its later dates
    if end_unsaid or (own_end_unsaid and (f.started_by or f.later_ends and (f.valid_from is None or f.start_guessed))):
        # (a statement left in started_by said the start without an end: the end was the forgotten one's)
        out.replay = _unsay_end(f)
    if not start_unsaid or not all(ids and ids <= _later_or_ending(f) for ids in left):
        return out
    if own_end_unsaid:  # the start and the end came in one statement: both go
        out.replay = _unsay_end(f)
    if f.later_starts:
        first_start, *rest = f.later_starts
        f.valid_from, f.start_guessed, f.started_by, f.later_starts = (first_start.at, False,
                                                                         list(first_start.turns), rest)
        out.replay = True
    else:
        out.endings = endings_of(f)
    return out


def start_said_by(f: Fact) -> list[str]:
    """The turns of the statement that gave ``f`` its start: ``started_by`` (a start said after it was
    known, or the later start a split stint began at), else its first statement's."""
    return list(f.started_by) or first_statement(f)


def endings_of(f: Fact) -> list[Fact]:
    """The endings said of ``f`` (its stated end, when turns of their own said it, and its later ends), each
    as the statement it was: a fact with no start, that statement's turns, confidence and words.  The
    first takes ``f``'s id.  Pure."""
    said = ([(f.stated_to, f.ended_by, f.recorded_at)] if f.ended_by and f.stated_to is not None else []) + [
        (d.at, d.turns, d.recorded_at) for d in f.later_ends]
    words = [(words_turns(f), f.text), *f.other_words] if f.text else list(f.other_words)
    out: list[Fact] = []
    for at, turns, recorded in said:
        mine = set(turns)
        out.append(replace(
            f, id=f.id if not out else new_id(), valid_from=None, valid_to=at, stated_to=None, closed_by=None,
            start_guessed=False, started_by=[], ended_by=[], recorded_at=recorded, source_ids=list(turns),
            confidence=next((c for c, ids in f.confirmations if ids and set(ids) <= mine), f.confidence),
            confirmations=[], text=next((w for ids, w in words if mine & set(ids)), ""), text_from=[],
            other_words=[], later_starts=[], later_ends=[]))
    return out


def _unsay_end(f: Fact) -> bool:
    """``f``'s end unsaid: the first later end still said is its end, else it has none.  Always True (its
    slot is replayed)."""
    f.ended_by, f.stated_to = [], None
    if f.later_ends:  # (its turns, less the forgotten ones: the same ending said in two sessions)
        first, *rest = f.later_ends
        f.stated_to, f.ended_by, f.later_ends = first.at, list(first.turns), rest
    return True


def _later_or_ending(f: Fact) -> set[str]:
    """The turns of ``f``'s later starts and of its endings."""
    return set(f.ended_by).union(*(d.turns for d in [*f.later_starts, *f.later_ends]))


def _worded_by(f: Fact, forgotten: set[str]) -> bool:
    """Did only ``forgotten`` turns give ``f`` its words?  They came with the statement recorded in
    ``text_from``, else with the first statement (``confirmations``' first).  A fact said more than once
    before confirmations were recorded cannot tell: its words may quote a forgotten turn, so they go."""
    said_by = f.text_from or (f.confirmations[0][1] if f.confirmations else [])
    return not said_by or set(said_by) <= forgotten
