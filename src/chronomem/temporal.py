"""Interval algebra and the non-destructive temporal update rules, as pure functions.

Nothing here touches a database: :func:`plan_update` looks at one incoming
fact and the stored facts it could interact with, and returns what to insert
and which stored facts change.  The rules (step 6 of REAL's write path):

* an *ending* (incoming ``valid_to`` set) closes the matching open fact (in a
  single-valued slot where none matches, the open fact named alike:
  :func:`named_alike`, "I quit Asda" ends "works_at Asda head office"); if it
  also says the stint began earlier than stored, that earlier part is inserted
  as its own fact, placed in order; an ending that meets no open stint ends the stint of the fact that
  began last before it, as if it had come first (rule 1c, :func:`_end_closed_stint`): earlier than that
  stint's stated end it closes it there, at or after its end (stated, or inferred from the value that
  followed) it is said again about it, and never a stint of its own reaching back to an unknown start;
* the *same fact again* (same key, same stability class, starting inside a
  stored interval) reinforces it: provenance merged, confidence raised, the
  statement kept in its ``confirmations`` (forgetting it lowers the confidence
  again: :func:`unconfirm`); a later start than the fact's is kept in its
  ``later_starts`` and an end said after its stated end in its ``later_ends``
  (:class:`~chronomem.model.LaterDate`), so that a stint learned later takes
  them back as if it had come first: a value placed between the fact's start and
  a later start splits the fact there (:func:`split_later_starts`: "Lisbon from
  2017", "Lisbon since 2021", then "Porto from 2018" leave Lisbon, Porto, Lisbon),
  and a start said between a stint's end and an ending said after it takes that
  ending (rule 3b, :func:`_take_stated_end`);
* otherwise the fact is inserted; if it is stable (``c >= θ``) it is placed in
  time order among the stable facts of its *slot* — the subject's facts of the
  relation for single-valued relations, the identical fact for multi-valued
  ones: an earlier overlapping fact is closed at the new start, and a later one
  closes the new fact at its own start;
* equal starts (the tie rule): when two stable values of a slot claim the same
  ``valid_from``, the later-recorded statement is a correction and wins; the
  earlier one is *superseded*: kept in history with ``closed_by`` naming the
  winner and no end (``valid_to`` is None; its stated end stays in
  ``stated_to``), and it holds at no instant (:attr:`Fact.superseded`); two
  endings with unknown starts and the same end tie the same way.  No
  fact is ever closed at its own start, so no interval is empty
  (``valid_to == valid_from``), which ``add_facts`` refuses.  A superseded fact
  takes no part in later updates (it neither closes, is closed, is ended nor
  is reinforced: saying it again records it anew, and the new statement wins
  the tie); forgetting its winner reinstates it (:func:`rebuild_slot`);
* a fact below θ never closes anything and is never closed;
* a start that was never said is inferred where the slot tells it (an ending
  with an unknown start follows the ending before it) and marked
  ``start_guessed``: a start said later replaces it (rule 1b), and rebuilding
  the slot (after a forget or a correction) infers it again from what remains.

Invariant (tested with hypothesis): within a slot, the intervals of the stable,
not superseded facts never overlap and are never empty, and no stored fact is
ever removed.  One known limit: two endings whose starts both stay unknown
("I left Porto in 2015", "I left Lisbon in 2016", nothing else known) both
reach back to an unknown start, so before the earlier end both hold; a start
learned later (or a stored fact with a known start) orders them.

Order independence (tested with hypothesis, ``tests/test_temporal_order_independence.py``):
dated starts (a value started up to twice) and dated endings of a started value
give the same facts at every instant whatever order they arrive in.  Endings
dated before any stated start of their value, and statements giving both a start
and an end, are outside it.  A slot replayed after a forget keeps stints split
out of one fact apart (the same answers; two rows where one would do).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from .entities import new_id
from .limits import MAX_LATER_STARTS, MAX_OTHER_WORDS
from .model import Fact, LaterDate, Origin
from .registry import RelationSpec

Key = tuple[str, str, str]


@dataclass(slots=True)
class Plan:
    """What applying one incoming fact does."""

    insert: Fact | None = None
    changed: list[Fact] = field(default_factory=list)  # new versions of stored facts
    # stints split out of the facts the insert or an ending cut: a statement said again with a later start
    # than its fact's, after the cut (:func:`split_later_starts`); new facts, to insert with ``insert``
    split: list[Fact] = field(default_factory=list)
    closed: list[Fact] = field(default_factory=list)  # subset of changed: closed by the insert
    reinforced: Fact | None = None  # new version of a reinforced fact (also in changed)


def is_stable(f: Fact, theta: float) -> bool:
    return f.confidence >= theta


def _live(f: Fact, theta: float) -> bool:
    """Stable and not superseded: a fact that takes its place in its slot."""
    return f.confidence >= theta and not f.superseded


def reinforce_confidence(old: float, new: float, theta: float) -> float:
    """Raise confidence when a fact is confirmed again.

    Stable confirmations move the confidence part of the way towards 1; hedged
    repetitions never raise a fact above θ ("I might…" said twice is still a maybe).
    """
    hi, lo = max(old, new), min(old, new)
    if hi < theta or lo < theta:
        return hi
    return round(min(1.0, hi + (1.0 - hi) * lo * 0.5), 6)


def confirm(stored: Fact, new: Fact, theta: float) -> tuple[float, list[tuple[float, list[str]]]]:
    """The confidence and confirmations of ``stored`` once ``new`` has said it again.

    The confirmations keep each statement's own confidence with its turns, so that
    forgetting those turns can take the raise back (:func:`refold`).
    """
    said = stored.confirmations or [(stored.confidence, list(stored.source_ids))]
    return (reinforce_confidence(stored.confidence, new.confidence, theta),
            [*said, (new.confidence, list(new.source_ids))])


def fold_repetition(f: Fact, again: Fact, theta: float) -> Fact:
    """A new version of ``f`` once ``again``, the same fact said again inside ``f``'s interval, is folded
    into it (rule 2): its turns, its raise of the confidence, an ending said again, words ``f`` lacked.

    ``again`` is a new statement, or a stored fact that becomes a repetition when two entities are merged
    (its own confirmations then come along, each raise still undoable by forgetting its turns).
    """
    # words f has: the repetition's are kept beside them, for when f's go (chronomem.forgetting)
    said_beside = [(words_turns(again), again.text)] if f.text else []
    # an ending said again: forgetting one of the two sayings must not reopen the fact
    ends_too = bool(f.ended_by) and again.valid_to is not None and not (f.stated_to and f.stated_to < again.valid_to)
    changed = replace(
        f,
        source_ids=merge_ids(f.source_ids, again.source_ids),
        ended_by=merge_ids(f.ended_by, again.ended_by or again.source_ids) if ends_too else f.ended_by,
        text=f.text or again.text,
        # a fact stored without words takes the repetition's: forgetting its turns takes them back
        text_from=(again.text_from or list(again.source_ids)) if not f.text and again.text else f.text_from,
        other_words=keep_words(f.other_words, *said_beside, *again.other_words),
    )
    theirs = again.confirmations or [(again.confidence, list(again.source_ids))]  # a new statement: itself
    for c, _ in theirs:
        changed.confidence = reinforce_confidence(changed.confidence, c, theta)
    changed.confirmations = [*(f.confirmations or [(f.confidence, list(f.source_ids))]), *theirs]
    # a later start than f's is kept: a value learned later to hold in between splits f there
    said = again.confirmations[0][1] if again.confirmations else again.source_ids  # its own statement's turns
    later = [d for d in again.later_starts if _before(f.valid_from, d.at)]
    if again.valid_from is not None and _before(f.valid_from, again.valid_from):
        later.append(LaterDate(again.valid_from, again.recorded_at, list(said)))
    changed.later_starts = keep_later_dates(f.later_starts, later)
    if (again.valid_from is not None and again.valid_from == f.valid_from and not f.start_guessed
            and not again.start_guessed and (ends_too or again.valid_to is None)):
        # it gives the start too (with the ending it repeats, or alone): forgetting the others leaves it the
        # start, and an end only they gave goes (chronomem.unsaying)
        changed.started_by = merge_ids(f.started_by or first_statement(f), said)
    # an end said after f's stated end is kept too: a stint of f that starts in between, learned later, takes it
    ends = [d for d in again.later_ends if f.stated_to is not None and f.stated_to < d.at]
    end = again.stated_to or again.valid_to
    if end is not None and f.stated_to is not None and f.stated_to < end:
        ends.append(LaterDate(end, again.recorded_at, list(said)))
    changed.later_ends = keep_later_dates(f.later_ends, ends)
    return changed


def beyond_its_end(host: Fact, again: Fact, theta: float) -> tuple[Fact, Fact | None]:
    """``again``, a stored fact about to be folded into ``host`` (a restored backup's row, a merged entity's
    fact), without the statements it holds as later starts at or after ``host``'s end, and those statements
    as a stint of their own (:func:`split_later_starts`: from the first of them, with ``again``'s end), or
    ``None``.  Folded whole, they would be later starts outside ``host`` ("Porto from 2015, again now" into
    "Porto 2015 to April 2015"), which an export refuses; apart, the stint is placed, or folded, on its own.
    ``again`` keeps no end then (its end was the stint's).  Pure."""
    end = host.valid_to or host.stated_to
    if end is None or not any(end <= d.at for d in again.later_starts):
        return again, None
    rest, stint = split_later_starts(again, end, theta)
    return (again, None) if stint is None else (replace(rest, valid_to=None, closed_by=None), stint)


def keep_later_dates(kept: Sequence[LaterDate], more: Sequence[LaterDate]) -> list[LaterDate]:
    """``kept`` with ``more`` (a fact's :attr:`~chronomem.model.Fact.later_starts` or ``later_ends``), in order of
    date: a date already kept gains the turns (and keeps the earlier record); beyond
    :data:`~chronomem.limits.MAX_LATER_STARTS` the two closest are kept as one, at the later.

    >>> from datetime import datetime as d
    >>> a, b = LaterDate(d(2021, 1, 1), d(2021, 1, 1), ["m5"]), LaterDate(d(2021, 1, 1), d(2022, 1, 1), ["m9"])
    >>> [(x.at.year, x.recorded_at.year, x.turns) for x in keep_later_dates([a], [b])]
    [(2021, 2021, ['m5', 'm9'])]
    """
    by_date: dict[datetime, LaterDate] = {}
    for s in [*kept, *more]:
        had = by_date.get(s.at)
        by_date[s.at] = s if had is None else LaterDate(
            s.at, min(had.recorded_at, s.recorded_at), merge_ids(had.turns, s.turns))
    out = sorted(by_date.values(), key=lambda s: s.at)
    while len(out) > MAX_LATER_STARTS:
        i = min(range(1, len(out)), key=lambda i: out[i].at - out[i - 1].at)
        earlier, later = out[i - 1], out[i]
        out[i - 1: i + 1] = [LaterDate(later.at, min(earlier.recorded_at, later.recorded_at),
                                        merge_ids(earlier.turns, later.turns))]
    return out


def split_later_starts(f: Fact, at: datetime, theta: float) -> tuple[Fact, Fact | None]:
    """``f`` about to be cut at ``at`` (closed there, or superseded by a value starting there), and the stint
    that its statements said again with a start at or after the cut stand for: "Lisbon" said in 2021 of a
    fact held since 2017, cut in 2018 by "Porto from 2018", is split out as its own fact from the earliest
    of those starts, as if it had been said after the cut.  Returns ``f`` without those statements and the
    new fact (``None``, and ``f`` itself, when none is that late).

    The new fact takes ``f``'s end as it was (its stated end, later ends and the turns that said them, what
    closed it), the statements' turns (the earliest start's as ``started_by``: forgetting them moves its
    start, :func:`chronomem.unsaying.unsay`), their confirmations (the confidence refolded from them) and words;
    ``f`` keeps the rest, with no end: the caller sets the end of the cut.  Pure."""
    # inside f from the cut on (one left outside by an older write is never a stint that ends before it starts)
    moved = [d for d in f.later_starts if at <= d.at and (f.valid_to is None or d.at < f.valid_to)]
    if not moved:
        return f, None
    left = [d for d in f.later_starts if d not in moved]
    moved_turns = set().union(*(d.turns for d in [*moved, *f.later_ends]), f.ended_by)
    host, theirs, words = _hand_over(f, moved_turns, {t for d in left for t in d.turns}, theta)
    first = moved[0]
    split = replace(
        f, id=new_id(), valid_from=first.at, start_guessed=False, started_by=list(first.turns),
        recorded_at=first.recorded_at,
        source_ids=[i for i in f.source_ids if i in moved_turns],
        confidence=refold(theirs, theta) if theirs else f.confidence, confirmations=theirs if len(theirs) > 1 else [],
        text=words[0][1] if words else "", text_from=words[0][0] if words else [], other_words=words[1:],
        later_starts=[d for d in moved if d.at > first.at])
    return replace(host, stated_to=None, ended_by=[], later_starts=left, later_ends=[]), split


def _hand_over(f: Fact, turns: set[str], keep: set[str],
               theta: float) -> tuple[Fact, list[tuple[float, list[str]]], list[tuple[list[str], str]]]:
    """``f`` without the statements said in ``turns``, and what those statements take to another fact: their
    confirmations and words (with their turns among ``turns``).  Its first statement stays, unless statements
    other than it gave ``f`` its start (``started_by``: the first was an ending, and can go) and another stays.
    ``f``'s confidence is refolded from the confirmations left; a turn goes from its ``source_ids`` unless
    what stays needs it (``keep``: the turns of the later dates it keeps, and of its other statements)."""
    went = {i for i, (_, ids) in enumerate(f.confirmations)
            if (i > 0 or (f.started_by and not set(ids) & set(f.started_by))) and ids and set(ids) <= turns}
    if len(went) == len(f.confirmations):
        went.discard(0)
    theirs = [c for i, c in enumerate(f.confirmations) if i in went]
    mine = [c for i, c in enumerate(f.confirmations) if i not in went]
    needed = set().union(*(ids for _, ids in mine), keep, f.started_by, f.text_from) if f.confirmations \
        else set(f.source_ids) - turns

    def stays(i: str) -> bool:
        return i not in turns or i in needed

    words = [([i for i in ids if i in turns], text) for ids, text in f.other_words if turns & set(ids)]
    host = replace(
        f, source_ids=[i for i in f.source_ids if stays(i)],
        confidence=refold(mine, theta) if went else f.confidence, confirmations=mine if len(mine) > 1 else [],
        other_words=[(kept, text) for ids, text in f.other_words if (kept := [i for i in ids if stays(i)]) or not ids])
    return host, theirs, words


def refold(confirmations: Sequence[tuple[float, Sequence[str]]], theta: float) -> float:
    """The confidence that ``confirmations`` give, made in their order (:func:`reinforce_confidence`).

    >>> refold([(0.9, ["m1"]), (0.9, ["m2"])], 0.6), refold([(0.9, ["m1"])], 0.6)
    (0.945, 0.9)
    """
    conf = confirmations[0][0]
    for c, _ in confirmations[1:]:
        conf = reinforce_confidence(conf, c, theta)
    return conf


def unconfirm(f: Fact, forgotten: set[str], theta: float) -> None:
    """Drop from ``f`` the confirmations and later dates said only in ``forgotten`` turns and lower its
    confidence to what the others give.  Mutates ``f``.  A fact confirmed before confirmations were recorded (its
    list is empty) keeps its confidence: nothing tells the raise."""
    kept = [(c, ids) for c, ids in f.confirmations if not ids or not set(ids) <= forgotten]
    if kept and len(kept) < len(f.confirmations):
        if not replaced_by_correction(f):  # a version a correction replaced keeps its confidence 0
            f.confidence = refold(kept, theta)
        f.confirmations = kept if len(kept) > 1 else []
    # the later dates said only there go too; the others lose those turns
    f.later_starts, f.later_ends = (
        [d._replace(turns=[i for i in d.turns if i not in forgotten]) for d in dates
         if not d.turns or not set(d.turns) <= forgotten] for dates in (f.later_starts, f.later_ends))


def first_statement(f: Fact) -> list[str]:
    """The turns of ``f``'s first statement: the first of its ``confirmations``, or all its turns when it
    was said once."""
    return list(f.confirmations[0][1] if f.confirmations else f.source_ids)


def words_turns(f: Fact) -> list[str]:
    """The turns that gave ``f`` its words: ``text_from``, else its first statement's turns."""
    return list(f.text_from) or first_statement(f)


def keep_words(words: Sequence[tuple[list[str], str]],
               *said: tuple[Sequence[str], str]) -> list[tuple[list[str], str]]:
    """A fact's other statements' words (``Fact.other_words``) with more ``said`` as (turns, words)
    pairs: words already kept gain the turns, new words come last, and beyond
    :data:`~chronomem.limits.MAX_OTHER_WORDS` the oldest go.  Empty or blank words are skipped.

    >>> keep_words([(["m1"], "Maya lives in Porto.")], (["m7"], "Maya still lives in Porto."))
    [(['m1'], 'Maya lives in Porto.'), (['m7'], 'Maya still lives in Porto.')]
    >>> keep_words([(["m1"], "Maya lives in Porto.")], (["m7"], "Maya lives in Porto."))
    [(['m1', 'm7'], 'Maya lives in Porto.')]
    """
    out = [(list(ids), text) for ids, text in words]
    for turns, text in said:
        if not text.strip():
            continue
        at = next((i for i, (_, kept) in enumerate(out) if kept == text), None)
        if at is None:
            out.append((list(turns), text))
        else:
            out[at] = (merge_ids(out[at][0], turns), text)
    return out[-MAX_OTHER_WORDS:]


def unsay_words(f: Fact, forgotten: set[str]) -> bool:
    """Forget the other statements' words that only ``forgotten`` turns said (the others lose those turns),
    and give ``f``, if its own words went, the oldest words still said.  Mutates ``f``; whether any words
    went or moved (what quoted ``f`` before, a job's result, quotes words it no longer holds)."""
    kept = [(left, text) for ids, text in f.other_words
            if (left := [i for i in ids if i not in forgotten]) or not ids]
    changed = len(kept) < len(f.other_words)
    if not f.text:
        said = next((i for i, (ids, _) in enumerate(kept) if ids), None)
        if said is not None:
            (f.text_from, f.text), changed = kept.pop(said), True
    f.other_words = kept
    return changed


def merge_ids(a: Sequence[str], b: Sequence[str]) -> list[str]:
    out = list(a)
    seen = set(out)
    for x in b:
        if x not in seen:
            out.append(x)
            seen.add(x)
    return out


def _before(a: datetime | None, b: datetime | None) -> bool:
    """Strict order of starts where ``None`` (unknown start) is minus infinity."""
    if a is None:
        return b is not None
    return b is not None and a < b


def said_inside(f: Fact, start: datetime | None, end: datetime | None) -> bool:
    """Does ``[start, end)`` (``end`` None: open) lie inside ``f``'s interval?  Rule 2's test for the same
    fact said again, used also when a merge makes one entity's fact a repetition of the other's."""
    return _contains(f, start) and (end is None or (f.valid_to is not None and end <= f.valid_to))


def said_inside_stated(f: Fact, start: datetime | None, end: datetime | None) -> bool:
    """:func:`said_inside`, or inside ``f`` up to its stated end where a later value's start cut it short:
    "Porto from 2016 to 2019" says again what the held "Porto from 2016 to 2019", closed in 2017 by "Berlin
    from 2017", says (and a restored backup does too: :mod:`chronomem.importing`).  Pure."""
    return said_inside(f, start, end) or (end is not None and f.stated_to is not None and end <= f.stated_to
                                          and said_inside(f, start, None))


def _contains(f: Fact, when: datetime | None) -> bool:
    if when is None:
        return True
    return (f.valid_from is None or f.valid_from <= when) and (f.valid_to is None or when < f.valid_to)


_ARTICLE = re.compile(r"^(?:the|a|an|my|our|his|her|their)\s+", re.IGNORECASE)


def _name_words(name: str) -> list[str]:
    return [re.sub(r"'s$", "", w) for w in re.findall(r"[\w'&+-]+", _ARTICLE.sub("", name.strip()).lower())]


def named_alike(a: str, b: str) -> bool:
    """Does one name begin with the whole of the other, word by word ("Asda" and "Asda head office", "St
    James's" and "St James's Hospital", "the Royal Swedish Opera" and "Royal Swedish Opera")?  Pure.

    >>> named_alike("Asda", "Asda head office"), named_alike("Asda", "Tesco"), named_alike("Bank", "Bank Mandiri")
    (True, False, True)
    """
    x, y = _name_words(a), _name_words(b)
    short, long_ = sorted((x, y), key=len)
    return bool(short) and long_[:len(short)] == short


def holder(f: Fact, spec: RelationSpec) -> str:
    """Whose single value of ``spec`` ``f`` states: its subject, or its object when ``f`` is stated with
    the inverse relation ("Carol manages Maya" states Maya's ``reports_to``)."""
    return f.object if f.relation != spec.name and f.relation == spec.inverse else f.subject


def in_slot(a: Fact, b: Fact, spec: RelationSpec, key: Callable[[Fact], Key]) -> bool:
    """Can stable facts ``a`` and ``b`` not both hold at once?  ``spec`` is the slot's relation;
    ``a`` and ``b`` are facts of it or of its inverse."""
    if spec.single_valued and spec.symmetric:
        return bool({a.subject, a.object} & {b.subject, b.object})
    return slot_of(a, spec, key) == slot_of(b, spec, key)


def slot_of(f: Fact, spec: RelationSpec, key: Callable[[Fact], Key]) -> str | Key | None:
    """What :func:`in_slot` compares, so that facts can be grouped by slot instead of compared in
    pairs: the holder of a single value, the fact's key in a many-valued relation.  ``None`` for a
    symmetric single value ("married_to"), whose slots are not a partition: Maya's and Tom's share
    their marriage."""
    if spec.single_valued:
        return None if spec.symmetric else holder(f, spec)
    return key(f)


def in_their_slots(members: Sequence[Fact], spec: RelationSpec,
                   key: Callable[[Fact], Key]) -> Callable[[Fact], bool]:
    """A test of whether a fact is one of ``members`` or shares a slot with one (:func:`in_slot`),
    by one set lookup instead of a comparison with each member."""
    ids = {m.id for m in members}
    if spec.single_valued and spec.symmetric:
        ends = {end for m in members for end in (m.subject, m.object)}
        return lambda f: f.id in ids or f.subject in ends or f.object in ends
    slots = {slot_of(m, spec, key) for m in members}
    return lambda f: f.id in ids or slot_of(f, spec, key) in slots


def plan_update(
    new: Fact,
    stored: Sequence[Fact],
    spec: RelationSpec,
    key: Callable[[Fact], Key],
    theta: float,
) -> Plan:
    """Decide how ``new`` enters a graph that holds ``stored``.

    ``new`` is not copied: when it is inserted, the plan's ``insert`` is ``new``
    itself, possibly with its interval adjusted.  Stored facts are never mutated;
    their new versions are returned in ``changed``.

    ``stored`` must contain at least every fact of ``new``'s relation (and its
    inverse) touching ``new``'s subject or object; extra facts are ignored.
    ``subject``/``object`` are compared as given, so pass entity ids or
    canonical names consistently.
    """
    k = key(new)
    stable = is_stable(new, theta)
    # a superseded version or one a correction replaced takes no part in updates
    same = [f for f in stored if key(f) == k and is_stable(f, theta) == stable and not f.superseded
            and not replaced_by_correction(f)]

    # 1. an explicit ending closes the matching open fact (or, in a one-valued slot, the one open fact
    #    named alike: "I quit Asda" ends "works_at Asda head office")
    if new.valid_to is not None:
        # open, or closed only by inference (a later value's start, no end ever stated) after this end:
        # "I left Lisbon in June 2014" is more precise than "Lisbon until Berlin began in 2016"
        open_ = [f for f in same if _before(f.valid_from, new.valid_to) and (
            f.valid_to is None or (f.stated_to is None and new.valid_to < f.valid_to))]
        if not open_ and stable and spec.single_valued and not spec.symmetric:
            alike = [f for f in stored if f.relation == new.relation and f.valid_to is None and _live(f, theta)
                     and in_slot(new, f, spec, key) and _before(f.valid_from, new.valid_to)
                     and named_alike(f.object, new.object)]
            open_ = alike if len(alike) == 1 else []
        if open_:
            target = max(open_, key=lambda f: (f.valid_from is not None, f.valid_from or new.valid_to))
            split: list[Fact] = []
            target = _cut(target, new.valid_to, split, theta)  # said again after the ending: a stint of its own
            changed = replace(
                target,
                valid_to=new.valid_to,
                stated_to=new.valid_to,
                closed_by=None,  # its end is stated now, no longer inferred from the value that followed
                ended_by=list(new.source_ids),  # forgetting these turns reopens it (chronomem.forgetting)
                source_ids=merge_ids(target.source_ids, new.source_ids),
                # the ending's words ("Maya left Lisbon in June 2014") stand in for the fact's if those go
                other_words=keep_words(target.other_words, (new.source_ids, new.text)) if target.text
                else target.other_words,
            )
            changed.confidence, changed.confirmations = confirm(target, new, theta)
            if new.valid_from is not None and target.valid_from is not None and not target.start_guessed:
                # a start said with the ending is kept too, so that forgetting the statements that gave the
                # start leaves this one's ("Porto from 2016", then "from 2016 to 2019"; chronomem.unsaying)
                if new.valid_from == target.valid_from:
                    changed.started_by = merge_ids(target.started_by or first_statement(target), new.source_ids)
                elif target.valid_from < new.valid_from:
                    changed.later_starts = keep_later_dates(
                        target.later_starts, [LaterDate(new.valid_from, new.recorded_at, list(new.source_ids))])
            plan = Plan(changed=[changed], closed=[changed], split=split)
            if new.valid_from is not None and target.valid_from is not None and new.valid_from < target.valid_from:
                # "from 2016 to 2021" about a stint known only since 2018: the earlier part is
                # news too; it is kept as its own fact, placed in order (the stored one closes it)
                if new.stated_to is None:
                    new.stated_to = new.valid_to
                plan.insert = new
                if stable:
                    rivals = [changed if f.id == target.id else f for f in stored
                              if f.id != new.id and _live(f, theta) and in_slot(new, f, spec, key)]
                    more: list[Fact] = []
                    earlier = list(_place_in_slot(new, rivals, more, theta).values())
                    plan.split += more
                    plan.changed += earlier
                    plan.closed += earlier
            return plan
        if new.valid_from is None:
            absorbed = _end_closed_stint(new, same, theta)
            if absorbed is not None:
                return absorbed

    # 1b. the start of a stint known so far only by its stated end ("I left Acme in June 2020", then
    #     "I joined Acme in 2018"): the stored fact learns it (in place of a start it was only given by
    #     inference) and takes its place in the slot again
    if new.valid_from is not None:
        ended = [f for f in same if (f.valid_from is None or f.start_guessed) and f.stated_to is not None
                 and new.valid_from < f.stated_to and (new.valid_to is None or new.valid_to == f.stated_to)]
        if ended:
            target = min(ended, key=lambda f: f.stated_to or f.recorded_at)  # the first stint it can start
            start = new.valid_from
            stint: Fact | None = None  # a fact planned again (a merge, a forget's replay) may have been said
            if new.later_starts and target.stated_to is not None:  # again after that end: a stint of its own
                new, stint = split_later_starts(new, target.stated_to, theta)
            # each half stays undoable: forgetting the start's turns leaves the ending as it was said
            # (started_by), forgetting the end's turns reopens the stint (ended_by), and the words go
            # with the turns that said them (text_from: the start's words, which tell the stint)
            said_end = target.ended_by or [i for i in first_statement(target) if i not in new.source_ids]
            learned = replace(
                target, valid_from=new.valid_from, start_guessed=False, valid_to=target.stated_to, closed_by=None,
                started_by=list(new.source_ids),
                # a statement that gives the end too ends it as well ("Porto from 2013 to October 2014")
                ended_by=merge_ids(said_end, new.source_ids) if new.valid_to is not None else said_end,
                # later starts kept while the start was unknown are later only after the one learned now
                later_starts=keep_later_dates([d for d in target.later_starts if start < d.at],
                                              [d for d in new.later_starts if start < d.at]),
                source_ids=merge_ids(target.source_ids, new.source_ids),
                text=new.text or target.text,
                text_from=list(new.source_ids) if new.text else ((target.text_from or said_end) if target.text else []),
                other_words=keep_words(target.other_words, (target.text_from or said_end, target.text))
                if new.text else target.other_words)
            learned.confidence, learned.confirmations = confirm(target, new, theta)
            plan = Plan(changed=[learned], reinforced=learned)
            if stable:
                rivals = [f for f in stored if f.id not in (target.id, new.id) and _live(f, theta)
                          and in_slot(learned, f, spec, key)]
                closing = _place_in_slot(learned, rivals, plan.split, theta)
                if stint is not None:  # it takes its place among them too
                    left = [g for g in (closing.get(f.id, f) for f in rivals) if _live(g, theta)]
                    closing.update(_place_in_slot(stint, [*left, learned], plan.split, theta))
                    learned = closing.pop(learned.id, learned)
                    plan.changed[0] = plan.reinforced = learned
                plan.changed += list(closing.values())
                plan.closed += list(closing.values())
            if stint is not None:
                plan.split.append(stint)
            return plan

    # 2. the same fact again reinforces
    for f in same:
        # an ending with no stated start is said inside a stint that began before it, not one that began
        # later: "I left Braga in 2013" is no repetition of "Braga from 2018 to 2024" (rule 1c)
        if said_inside_stated(f, new.valid_from, new.valid_to) and (
                new.valid_from is not None or new.valid_to is None or _before(f.valid_from, new.valid_to)):
            changed = fold_repetition(f, new, theta)
            return Plan(changed=[changed], reinforced=changed)

    # 3. insert; a stable fact takes its place in time order within its slot
    ins = new  # the caller's fresh object becomes the inserted fact
    if ins.stated_to is None:
        ins.stated_to = ins.valid_to
    plan = Plan(insert=ins)
    gave = _take_stated_end(ins, same, theta)  # an ending said after its stint was closed: this stint's
    if gave is not None:
        plan.changed.append(gave)
    if not stable:
        return plan
    rivals = [gave if gave is not None and f.id == gave.id else f for f in stored
              if f.id != ins.id and _live(f, theta) and in_slot(ins, f, spec, key)]
    _resolve_unknown_starts(ins, rivals)
    placed = _place_in_slot(ins, rivals, plan.split, theta)
    plan.changed = [*plan.changed, *placed.values()]
    plan.closed = list(placed.values())
    return plan


def _take_stated_end(ins: Fact, same: Sequence[Fact], theta: float) -> Fact | None:
    """Rule 3b: a start said after an ending that rule 1c gave an earlier stint of the same fact ("Porto from
    2014", "Lisbon from 2018" closing it, "I left Porto in June 2021", then "Porto again from April 2021"):
    the ending, dated inside the new stint, ends it, as it would have had the start come first; the earlier
    stint gives the ending up (its end is again the one inferred, or the one stated before), with its
    turns, confirmation and words, and the endings said after it.  A stated end the earlier stint's own
    statement gave ("Porto from 2014 to 2021", cut by Lisbon) ends the new stint too, as the statements in
    the other order do (rule 1), and stays.  Mutates ``ins``; returns the new version of the stint that gave
    the ending up, or ``None`` when none did."""
    s = ins.valid_from
    if s is None or ins.valid_to is not None:
        return None

    def end_after(f: Fact) -> datetime | LaterDate | None:  # f's first end after s, f being closed by s
        if f.valid_to is None or s < f.valid_to:
            return None
        if f.stated_to is not None and s < f.stated_to:
            return f.stated_to
        return next((d for d in f.later_ends if s < d.at), None)

    donors = [(f, end) for f in same if (end := end_after(f)) is not None]
    if not donors:
        return None
    f, end = max(donors, key=lambda d: d[0].valid_to or s)
    if isinstance(end, datetime):
        if not f.ended_by:  # its own statement's end, or an ending said without turns: both stints keep it
            ins.valid_to = ins.stated_to = end
            return None
        at, ended, later = end, list(f.ended_by), f.later_ends
    else:
        at, ended, later = end.at, end.turns, [d for d in f.later_ends if d.at > end.at]
    kept = [d for d in f.later_ends if d not in later and d != end]
    moved_turns = set().union(ended, *(d.turns for d in later))
    host, theirs, words = _hand_over(f, moved_turns, {t for d in [*f.later_starts, *kept] for t in d.turns}, theta)
    if not theirs and ended:  # f's first statement (it stays f's too) or f said once: recorded on ins all the same,
        # so that forgetting ins's own statement leaves the ending alone (chronomem.unsaying)
        theirs = [(f.confirmations[0][0] if f.confirmations else f.confidence, list(ended))]
    if theirs:  # the ending confirmed f: it confirms ins instead
        ins.confirmations = [(ins.confidence, list(ins.source_ids)), *theirs]
        ins.confidence = refold(ins.confirmations, theta)
    ins.valid_to = ins.stated_to = at
    ins.ended_by = list(ended)
    ins.source_ids = merge_ids(ins.source_ids, [i for i in f.source_ids if i in moved_turns])
    ins.other_words = keep_words(ins.other_words, *words)
    ins.later_ends = later
    if isinstance(end, datetime):
        return replace(host, stated_to=None, ended_by=[], later_ends=kept)
    return replace(host, later_ends=kept)


def _end_closed_stint(new: Fact, same: Sequence[Fact], theta: float) -> Plan | None:
    """Rule 1c: an ending with no stated start (``new.valid_to`` only) that meets no open stint of its fact
    ends the stint it falls in or after: the latest of ``same`` (the fact's own versions) to start before
    it, when that one is already closed (at an end stated later, or at or before the ending).  ``None``
    when there is none with a known start: the ending then stands for a stint of its own (step 3).

    The ending is applied as if it had come before whatever closed the stint, so that the order the
    statements arrive in does not change the timeline:

    * the stint is closed at a later instant (a stated end after this one): it ends here instead, its
      end stated now ("the cat died in 2020" after "… died in 2021");
    * the stint is closed already at or before the ending: the ending is said again about it (rule 2) —
      its end stated if it had none ("I left Porto in June 2021" when "Lisbon from March 2021" closed
      Porto), and never a new stint reaching back to an unknown start that nobody stated.
    """
    end = new.valid_to
    assert end is not None
    before = [f for f in same if _before(f.valid_from, end) and f.valid_to is not None]
    if not before:
        return None
    target = max(before, key=lambda f: (f.valid_from is not None, f.valid_from or end))
    assert target.valid_to is not None  # an open stint begun before the ending was rule 1's to end
    if target.stated_to is not None and target.stated_to <= end:  # the same end again, or a later one
        changed = fold_repetition(target, new, theta)
        if not changed.ended_by and target.stated_to == end:
            # the end its own statement gave, said again: each of the two ends it, so forgetting one leaves
            # it ended (a later end is kept in later_ends, and ends it only when this one is forgotten)
            changed.ended_by = merge_ids(first_statement(target), new.source_ids)
        return Plan(changed=[changed], reinforced=changed)
    earlier = end < target.valid_to
    split: list[Fact] = []
    if earlier:  # said again after the ending: a stint of its own
        target = _cut(target, end, split, theta)
    # the end stated before, later than this one, is kept: a stint learned later to start in between takes it
    # (with the turns that said it: an ending's, else its own statement's)
    later = [LaterDate(target.stated_to, target.recorded_at, list(target.ended_by) or first_statement(target))] \
        if target.stated_to is not None else []
    changed = replace(
        target,
        valid_to=end if earlier else target.valid_to,
        stated_to=end,
        closed_by=None if earlier else target.closed_by,
        ended_by=list(new.source_ids) if later else merge_ids(target.ended_by, new.source_ids),
        later_ends=keep_later_dates(target.later_ends, later),
        source_ids=merge_ids(target.source_ids, new.source_ids),
        other_words=keep_words(target.other_words, (new.source_ids, new.text)) if target.text
        else target.other_words,
    )
    changed.confidence, changed.confirmations = confirm(target, new, theta)
    if earlier:
        return Plan(changed=[changed], closed=[changed], split=split)
    return Plan(changed=[changed], reinforced=changed)


def _place_in_slot(ins: Fact, rivals: Sequence[Fact], split: list[Fact] | None = None,
                   theta: float = 0.0) -> dict[str, Fact]:
    """Put stable ``ins`` in time order among its stable ``rivals``.

    Mutates ``ins`` (a later rival closes it) and returns new versions of the
    rivals it closes (an earlier rival ends where ``ins`` starts) or supersedes
    (a rival with the same known start: the tie rule, see the module doc).  With
    ``split``, a rival cut where it was said again later gives that stint up
    (:func:`split_later_starts`): the new facts are appended to ``split``, and the
    first of them to start closes ``ins``, as a later rival does.  So does ``ins``
    itself, cut by a later rival before a later start of its (a fact replayed after
    a rival recorded before it: a correction, a restored backup), and its stint
    takes its place among the rivals.
    """
    said_end, said_closed = ins.valid_to, ins.closed_by
    changed: dict[str, Fact] = {}
    for f in sorted(rivals, key=lambda f: (f.valid_from is not None, f.valid_from or ins.recorded_at)):
        if _tied(f, ins):
            changed[f.id] = replace(_cut(f, f.valid_from, split, theta), valid_to=None, closed_by=ins.id)
        elif f.valid_from is None or _before(f.valid_from, ins.valid_from):
            if ins.valid_from is not None and (f.valid_to is None or f.valid_to > ins.valid_from):
                changed[f.id] = replace(_cut(f, ins.valid_from, split, theta), valid_to=ins.valid_from,
                                        closed_by=ins.id)
        elif ins.valid_to is None or ins.valid_to > f.valid_from:
            ins.valid_to = f.valid_from
            ins.closed_by = f.id
    for g in list(split or ()):
        if g.valid_from == ins.valid_from and _same_value(g, ins, theta):  # the same said again: one fact
            _become(ins, fold_repetition(ins, g, theta))
            split.remove(g)  # type: ignore[union-attr]
        elif g.valid_from == ins.valid_from:  # said again at the start of ins: ins is the later statement
            g.valid_to, g.closed_by = None, ins.id
        elif g.valid_from is not None and (ins.valid_to is None or ins.valid_to > g.valid_from):
            ins.valid_to = g.valid_from
            ins.closed_by = g.id
    if split is not None and ins.later_starts and ins.valid_to is not None and ins.valid_to != said_end:
        cut, closer = ins.valid_to, ins.closed_by
        host, stint = split_later_starts(replace(ins, valid_to=said_end, closed_by=said_closed), cut, theta)
        if stint is not None:
            _become(ins, host)  # cut where it was
            ins.valid_to, ins.closed_by = cut, closer
            more: list[Fact] = []  # its rivals: those left live (a tie superseded some), and the stints split so far
            placed = [g for g in (*(changed.get(f.id, f) for f in rivals), *split) if _live(g, theta)]
            twin = next((g for g in placed if g.valid_from == stint.valid_from and _same_value(g, stint, theta)), None)
            if twin is not None:  # the same value said from the same start: the stint's statements join it
                joined = fold_repetition(twin, stint, theta)
                if twin in split:
                    split[split.index(twin)] = joined
                else:
                    changed[twin.id] = joined
                return changed
            moved = _place_in_slot(stint, placed, more, theta)
            split[:] = [moved.pop(g.id, g) for g in split]  # a new fact is inserted as it ends up, not changed
            changed.update(moved)
            split += [stint, *more]
    return changed


def _become(f: Fact, version: Fact) -> None:
    """Make ``f``, an object a caller holds, ``version`` (the placing rules mutate the fact they place)."""
    for name in Fact.__slots__:
        setattr(f, name, getattr(version, name))


def _same_value(a: Fact, b: Fact, theta: float) -> bool:
    """Do ``a`` and ``b`` of one slot say the same value, so that one can fold into the other (:func:`foldable`)?"""
    return ((a.relation, a.subject_id or a.subject, a.object_id or a.object)
            == (b.relation, b.subject_id or b.subject, b.object_id or b.object)
            and is_stable(a, theta) == is_stable(b, theta) and foldable(a) and foldable(b))


def _cut(f: Fact, at: datetime | None, split: list[Fact] | None, theta: float) -> Fact:
    """``f`` without the stint its later starts from ``at`` on stand for, which goes to ``split``
    (:func:`split_later_starts`); ``f`` itself when no ``split`` list is given or ``f`` has no start to cut at."""
    if split is None or at is None:
        return f
    host, stint = split_later_starts(f, at, theta)
    if stint is not None:
        split.append(stint)
    return host


def _tied(f: Fact, ins: Fact) -> bool:
    """Do ``f`` and ``ins`` claim the same interval start (the tie rule)?  Two unknown starts
    tie when the facts also end at the same instant: neither can be placed before the other."""
    if f.valid_from is not None:
        return f.valid_from == ins.valid_from
    return ins.valid_from is None and f.valid_to is not None and f.valid_to == ins.valid_to


def _resolve_unknown_starts(ins: Fact, rivals: list[Fact]) -> None:
    """Place facts whose start is unknown (endings with no matching open fact).

    Two facts with unknown starts are ordered by their ends: the one that ended
    first came first, so the other one starts when it ended.  So does an ending after
    stints of known start that all ended before it ("Porto from 2010", "left Porto in
    2012", then "I left Lisbon in 2021": Lisbon from 2012, not an unknown start cut
    short where Porto began).  Only unknown starts are filled in, marked
    ``start_guessed``; nothing known is changed.
    """
    if ins.valid_from is not None:
        return
    ends = [f.valid_to for f in rivals if f.valid_from is None and f.valid_to is not None]
    if ins.valid_to is not None:
        began = [f for f in rivals if f.valid_from is not None and f.valid_from < ins.valid_to]
        if all(f.valid_to is not None and f.valid_to < ins.valid_to for f in began):
            ends += [f.valid_to for f in began if f.valid_to is not None]
    earlier = [e for e in ends if ins.valid_to is None or e < ins.valid_to]  # an equal end is a tie
    if earlier:
        ins.valid_from = max(earlier)
    elif any(f.valid_from is None for f in rivals):
        # both unknown; the new one is the later-recorded one, so it wins from now on
        ins.valid_from = ins.recorded_at if ins.valid_to is None else None
    ins.start_guessed = ins.valid_from is not None
    if ins.valid_from is None:
        # still unknown: it precedes every rival with a known start
        starts = [f.valid_from for f in rivals if f.valid_from is not None]
        if starts:
            first = min(starts)
            if ins.valid_to is None or ins.valid_to > first:
                ins.valid_to = first


def rebuild_slot(facts: Sequence[Fact], spec: RelationSpec, key: Callable[[Fact], Key],
                 theta: float) -> list[Fact]:
    """Recompute the closures of a slot from the stated intervals, in recorded order.

    Used after a fact is forgotten: facts it had closed reopen as if it had
    never been said, and starts that were only inferred are inferred again
    from what remains; a fact cut before a later start of its gives that stint
    up as a new fact (:func:`split_later_starts`: an entity merge or a restored
    backup brings such cuts).  Returns the facts whose interval changed and the
    new ones (ids the slot did not hold), in recorded order.

    Only facts of one slot meet, so each slot is replayed on its own (:func:`slot_of`): 70,000
    "Maya likes …" facts are 70,000 slots of one fact, not one slot compared pair by pair.
    """
    groups: dict[object, list[Fact]] = defaultdict(list)
    for f in facts:
        groups[slot_of(f, spec, key)].append(f)
    changed = [c for members in groups.values() for c in _replay_slot(members, spec, key, theta)]
    return sorted(changed, key=lambda f: f.recorded_at)


def _replay_slot(facts: Sequence[Fact], spec: RelationSpec, key: Callable[[Fact], Key],
                 theta: float) -> list[Fact]:
    """:func:`rebuild_slot` of facts that may all meet: each is replayed against every live one before it."""
    # a version replaced by a correction (confidence 0, closed_by its correction) keeps its link
    reset = sorted((f if replaced_by_correction(f) else replace(f, valid_to=f.stated_to, closed_by=None)
                    if not f.start_guessed else replace(f, valid_from=None, start_guessed=False,
                                                        valid_to=f.stated_to, closed_by=None) for f in facts),
                   key=lambda f: f.recorded_at)
    current: dict[str, Fact] = {}
    split: list[Fact] = []  # stints split out where a fact is cut before a later start of its (new facts)
    for f in reset:
        if is_stable(f, theta):
            rivals = [g for g in current.values() if _live(g, theta) and in_slot(f, g, spec, key)]
            if not replaced_by_correction(f):
                _resolve_unknown_starts(f, rivals)  # as when it was inserted (plan_update, step 3)
            more: list[Fact] = []
            current.update(_place_in_slot(f, rivals, more, theta))
            current.update((g.id, g) for g in more)
            split += more
        current[f.id] = f
    originals = {f.id: f for f in facts}
    new = {g.id for g in split}
    # its interval, its later starts, or the statements a stint of the same value gave it (_place_in_slot)
    return [f for f in current.values() if f.id in new or f != originals[f.id]]


def abutting_repetitions(facts: Sequence[Fact], key: Callable[[Fact], Key], theta: float) -> list[tuple[Fact, Fact]]:
    """Pairs ``(g, f)`` among ``facts`` (one slot, closures current) where ``f``, a later stint of the same fact
    said after it, ends ``g`` only by starting: ``g`` was closed at ``f``'s start by ``f`` and ``f`` lies within
    ``g``'s stated interval.  Another value stood between them when ``f`` was said ("Lisbon", "Porto", "Lisbon
    again"); with it forgotten, ``f`` says ``g`` again (rule 2) and is folded into it (:func:`fold_repetition`),
    as it would have been had the value in between never been said.  (A stint said before ``g`` and placed after
    it was never folded: rule 2 folds a statement into what was said before it.)  In recorded order, so a chain
    folds into its first.  Pure."""
    by_id = {f.id: f for f in facts}
    out: list[tuple[Fact, Fact]] = []
    for g in sorted(facts, key=lambda f: f.recorded_at):
        f = by_id.get(g.closed_by or "")
        if (f is not None and g.recorded_at < f.recorded_at and g.valid_to is not None and g.valid_to == f.valid_from
                and key(f) == key(g)
                and foldable(f) and foldable(g) and is_stable(f, theta) == is_stable(g, theta)
                and said_inside(replace(g, valid_to=g.stated_to), f.valid_from, f.stated_to)):
            out.append((g, f))
    return out


def foldable(f: Fact) -> bool:
    """A fact that can be a repetition, or take one in: not a correction or a version one replaced (their links
    stay), not superseded (a superseded fact takes no part in updates)."""
    return f.origin is not Origin.CORRECTED and not replaced_by_correction(f) and not f.superseded


def replaced_by_correction(f: Fact) -> bool:
    """A version :meth:`chronomem.Memory.correct` replaced: confidence 0, ``closed_by`` its correction."""
    return f.confidence == 0.0 and f.closed_by is not None


def overlaps(a_from: datetime | None, a_to: datetime | None,
             b_from: datetime | None, b_to: datetime | None) -> bool:
    """Do half-open intervals ``[a_from, a_to)`` and ``[b_from, b_to)`` share an instant?"""
    a_starts_before_b_ends = b_to is None or a_from is None or a_from < b_to
    b_starts_before_a_ends = a_to is None or b_from is None or b_from < a_to
    return a_starts_before_b_ends and b_starts_before_a_ends
