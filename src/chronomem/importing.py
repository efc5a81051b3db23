"""Importing an export: its rows checked, joined to what the user holds and written a batch at a time.

:meth:`Memory.import_` (an export in memory) and :meth:`Memory.import_from` (an export file, read by
:class:`chronomem.export_reader.ExportReader`) both hand :func:`import_batches` the export's rows in
table order, a batch at a time.  Everything happens in one transaction of the user: a bad row anywhere
(:mod:`chronomem.exports` checks each) rolls back what earlier batches wrote, so a refused import leaves
the store as it was, and the memory taken is a batch's plus the ids the import has seen.

Joining what the user holds:
- an imported entity named like one of the user's entities (by name or alias, known before this import)
  is that entity: its row and vector are dropped and the rows naming its id name the user's;
- every entity a fact or a spelling names is in the import or the user's;
- a fact names its endpoints as their entities are named now (the user's own row wins), and the vector
  of a fact so renamed is dropped, to be made again from its new words;
- a fact that says again what a fact the user held says (the same fact, inside its interval: a backup
  restored after a forget and a re-statement) is folded into the held fact as a repetition is (rule 2 of
  :mod:`chronomem.temporal`: its turns and confirmations join the held fact's, its raise of the
  confidence too), never written beside it; a statement the held fact has already folded in (the same
  turns, or a turnless one among its repetitions: the same backup restored again) raises nothing twice;
- facts joining the history of an entity the user held are placed in time order with it at the end.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import ValidationError
from .exports import RowChecker
from .extract.entities import FuzzyEntityResolver
from .graph import GraphWriter, slot_family
from .model import Fact
from .registry import RelationRegistry
from .store import Store
from .store.sql import TABLES, chunks
from .temporal import (Key, beyond_its_end, fold_repetition, foldable, is_stable, replaced_by_correction,
                       said_inside_stated)

__all__ = ["ExportBatches", "IMPORT_BATCH", "import_batches"]

IMPORT_BATCH = 1000  # rows of an export file checked and written at once

#: ``(table, number of the batch's first row in its table, rows as read)``, tables in the order of TABLES
ExportBatches = Iterable[tuple[str, int, Any]]


@dataclass
class _Import:
    """What one import has learnt of its entities so far, and what it wrote."""

    store: Store
    resolver: FuzzyEntityResolver
    registry: RelationRegistry
    user_id: str
    key: Callable[[Fact], Key]
    theta: float
    checker: RowChecker = field(default_factory=RowChecker)
    names: dict[str, str] = field(default_factory=dict)  # the import's entity id -> its name, as imported
    kept: set[str] = field(default_factory=set)  # the import's entity ids written as themselves
    new: set[str] = field(default_factory=set)  # ... of those, the ones the user did not hold before
    remap: dict[str, str] = field(default_factory=dict)  # import entity id -> the user's entity it is
    held: dict[str, str] = field(default_factory=dict)  # the user's entities the import names: id -> name
    renamed_facts: set[str] = field(default_factory=set)
    joining: list[str] = field(default_factory=list)  # new facts of an entity the user held
    imported: set[str] = field(default_factory=set)  # the facts this import wrote (never a repetition's host)
    folded: set[str] = field(default_factory=set)  # ... of those, the ones folded into a held fact (gone)
    stored: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    given: int = 0

    def add(self, table: str, start: int, raw: Any) -> None:
        rows = self.checker.rows(table, start, raw)
        self.given += len(rows)
        repeats: list[str] = []
        where = f"data.tables.{table}"
        if table == "entities":
            rows = self._entities(rows)
        elif table == "entity_names":
            for r in rows:
                r["entity_id"] = self.remap.get(r["entity_id"], r["entity_id"])
            self._check_references([(f"{where}[{i}].entity_id", r["entity_id"]) for i, r in enumerate(rows, start)])
        elif table == "facts":
            repeats = self._facts(rows, start)
        elif table == "vectors":
            rows = [r for r in rows if not (r["kind"] == "entity" and r["item_id"] in self.remap
                                            or r["kind"] == "fact" and (r["item_id"] in self.renamed_facts
                                                                        or r["item_id"] in self.folded))]
        if rows:
            self.stored[table] += self.store.load_user(self.user_id, {table: rows})[table]
        if table == "facts":
            self.stored[table] -= self._fold_repeats(repeats)

    def _entities(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The batch less the entities that are the user's own (mapped onto them)."""
        names = {r["id"]: r["name"] for r in rows}
        self.names.update(names)
        held = {e.id: e.name for e in self.store.entities(self.user_id, ids=list(names), with_aliases=False)}
        self.held.update(held)
        known = self.resolver.lookup(self.user_id, list(set(names.values())))
        # known before this import: an entity an earlier batch wrote is not the user's to merge into
        remap = {eid: known[name] for eid, name in names.items()
                 if name in known and known[name] != eid and known[name] not in self.new}
        self.remap.update(remap)
        kept = [r for r in rows if r["id"] not in remap]
        self.kept.update(r["id"] for r in kept)
        self.new.update(r["id"] for r in kept if r["id"] not in held)
        return kept

    def _facts(self, rows: list[dict[str, Any]], start: int) -> list[str]:
        """Check and rename the batch's facts; the new ones that may say again what a held fact says."""
        for r in rows:
            for col in ("subject_id", "object_id"):
                if r[col] is not None:
                    r[col] = self.remap.get(r[col], r[col])
        self._check_references([(f"data.tables.facts[{i}].{col}", r[col]) for i, r in enumerate(rows, start)
                                for col in ("subject_id", "object_id") if r[col] is not None])
        for r in rows:  # a fact names its endpoints as their entities are named (the user's row wins)
            for col in ("subject", "object"):
                entity = r[f"{col}_id"]
                name = self.held.get(entity) or self.names.get(entity)
                if name is not None and r[col] != name:
                    r[col] = name
                    self.renamed_facts.add(r["id"])
        renamed = set()  # a synonym this memory's registry knows ("resides_in") is stored as what it means
        for r in rows:
            if (canon := self.registry.canonical(r["relation"])) != r["relation"]:
                r["relation"] = canon
                renamed.add(r["id"])
        self.renamed_facts |= renamed
        ids = [r["id"] for r in rows]
        new = set(ids) - self.store.held_fact_ids(self.user_id, ids)
        self.imported |= new
        # ... and, like a fact of an entity the user held, placed in time order in its relation's slots
        self.joining += [r["id"] for r in rows if r["id"] in new and (
            r["subject_id"] in self.held or r["object_id"] in self.held or r["id"] in renamed)]
        # only a fact naming an entity the user held can be the same fact as one of the user's
        return [r["id"] for r in rows if r["id"] in new and (r["subject_id"] in self.held
                                                              or r["object_id"] in self.held)]

    def _fold_repeats(self, ids: Sequence[str]) -> int:
        """Fold each of the new facts ``ids`` that says again what a fact the user held says into that
        fact, as ``add_facts`` would have (:func:`~chronomem.temporal.plan_update`, rule 2: the same key and
        stability class, said inside the held fact's interval; :func:`~chronomem.temporal.fold_repetition`),
        and delete it; what one holds as said again after the held fact's end is a stint of its own
        (:func:`~chronomem.temporal.beyond_its_end`), folded in turn or stored.  Returns how many were folded."""
        total = 0
        for chunk in chunks(ids, IMPORT_BATCH):  # an import_ hands a whole table as one batch
            incoming = [f for f in self.store.facts(self.user_id, ids=chunk) if foldable(f)]
            if not incoming:
                continue
            ends = sorted({e for f in incoming for e in (f.subject_id, f.object_id) if e is not None})
            relations = sorted({r for f in incoming for r in slot_family(self.registry, f.relation)[1]})
            hosts: dict[Key, list[Fact]] = defaultdict(list)  # the user's own facts, in the store's order
            for g in self.store.facts(self.user_id, subject_ids=ends, object_ids=ends, relations=relations):
                if g.id not in self.imported and not g.superseded and not replaced_by_correction(g):
                    hosts[self.key(g)].append(g)
            changed: dict[str, Fact] = {}
            reworded: list[str] = []  # held facts that take a repetition's words: embedded again from them
            folded: list[str] = []
            stints: dict[str, Fact] = {}  # said again after their host's end: split off, stored unless folded
            pending = list(incoming)
            while pending:
                f = pending.pop(0)
                same = hosts.get(self.key(f), [])
                at = next((i for i, g in enumerate(same) if _repeats(g, f, self.theta)), None)
                if at is None:
                    continue
                host = same[at]
                f, stint = beyond_its_end(host, f, self.theta)
                if stint is not None:
                    pending.append(stint)
                    stints[stint.id] = stint
                unsaid = _unsaid(host, f)
                if unsaid:  # else said only in statements the held fact has folded in already: nothing to add
                    same[at] = changed[host.id] = fold_repetition(host, replace(f, confirmations=unsaid),
                                                                  self.theta)
                    if same[at].text != host.text:
                        reworded.append(host.id)
                if stints.pop(f.id, None) is None:  # a stint split off here was never stored
                    folded.append(f.id)
            if stints:  # placed with the rest of the import (joining)
                self.store.insert_facts(self.user_id, list(stints.values()))
                self.imported |= set(stints)
                self.joining += list(stints)
            if changed:
                self.store.update_facts(self.user_id, list(changed.values()))
                self.store.drop_fact_copies(self.user_id, reworded)
            if folded:
                total += self.store.delete_facts(self.user_id, folded)
                self.folded.update(folded)
        return total

    def _check_references(self, refs: Sequence[tuple[str, str]]) -> None:
        """Every entity id named is the import's or the user's (a fact pointing at no entity would be found
        by history() and by no query on its subject); the user's are remembered with their names."""
        asked = sorted({v for _, v in refs if v not in self.kept and v not in self.held})
        if asked:
            self.held.update((e.id, e.name) for e in self.store.entities(self.user_id, ids=asked,
                                                                           with_aliases=False))
        for where, value in refs:
            if value not in self.kept and value not in self.held:
                raise ValidationError(where, value, "names no entity of this export or of the user")


def _repeats(held: Fact, f: Fact, theta: float) -> bool:
    """Does ``f``, as stated (its start unless only inferred, its stated end), say again what ``held`` says
    (rule 2 of :func:`~chronomem.temporal.plan_update`: the same stability class, said inside ``held``'s
    interval)?  An ending with no stated start repeats only a stint that began before it.

    Inside up to ``held``'s stated end too, where a later value's start cut it short: "Porto from 2016 to
    2019" is what the held "Porto from 2016 to 2019", closed in 2017 by "Berlin from 2017", says, and the
    backup that says it again (or the same backup restored twice) is no second Porto beside it."""
    start = None if f.start_guessed else f.valid_from
    end = f.stated_to
    return (is_stable(held, theta) == is_stable(f, theta) and said_inside_stated(held, start, end)
            and (start is not None or end is None or held.valid_from is None or held.valid_from < end))


def _unsaid(held: Fact, f: Fact) -> list[tuple[float, list[str]]]:
    """The statements of ``f`` (its confirmations, or itself) that ``held`` has not folded in yet: a
    statement with turns is held when one of ``held``'s statements was said in all of them; one without
    turns cannot be told from another, so it is held when a turnless repetition of the same confidence
    is (the same backup restored again), each repetition standing for one."""
    said = held.confirmations or [(held.confidence, list(held.source_ids))]
    turns = [set(ids) for _, ids in said if ids]
    bare = [c for c, ids in said[1:] if not ids]  # the repetitions folded in, not the fact's own statement
    out = []
    for c, ids in f.confirmations or [(f.confidence, list(f.source_ids))]:
        if ids and any(set(ids) <= t for t in turns):
            continue
        if not ids and c in bare:
            bare.remove(c)
            continue
        out.append((c, list(ids)))
    return out


def import_batches(store: Store, resolver: FuzzyEntityResolver, graph: GraphWriter, user_id: str,
                   batches: ExportBatches) -> dict[str, int]:
    """Check and write ``batches`` into ``user_id`` in one transaction; the rows added per table and
    ``already_present`` (rows whose key was stored already, or entities that were the user's)."""
    with store.transaction(user_id):
        state = _Import(store, resolver, graph.registry, user_id, graph.key, graph.theta)
        for table, start, rows in batches:
            state.add(table, start, rows)
        if state.joining:  # their slots are placed in time order with the entity's history
            graph.rebuild(user_id, store.facts(user_id, ids=sorted(state.joining)))
    return {**state.stored, "already_present": state.given - sum(state.stored.values())}
