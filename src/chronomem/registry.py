"""The relation registry: canonical relations, synonyms and their properties.

A relation is *single-valued* when a subject has at most one value at a time
(``lives_in``: a new residence ends the old one) and *multi-valued* otherwise
(``likes``: new likes sit beside old ones).  *Symmetric* relations hold both
ways (``sibling_of``); *inverse* pairs mirror each other (``parent_of`` /
``child_of``).  Unknown relations default to multi-valued, so nothing is ever
closed by a relation the registry does not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import ValidationError
from .memo import text_memo

_WORD = re.compile(r"[^0-9a-z]+")


def normalize_relation(name: str) -> str:
    """``"Lives In"`` → ``"lives_in"``; raises on empty input."""
    if not isinstance(name, str):
        raise ValidationError("relation", name, "must be a string")
    return _normalize_relation(name)


@text_memo(maxsize=4096)  # relation names are user text too: forgetting empties the memo
def _normalize_relation(name: str) -> str:
    norm = _WORD.sub("_", name.strip().lower()).strip("_")
    if not norm:
        raise ValidationError("relation", name, "must not be empty")
    return norm


@dataclass(frozen=True, slots=True)
class RelationSpec:
    name: str
    single_valued: bool = False
    symmetric: bool = False
    inverse: str | None = None
    synonyms: tuple[str, ...] = ()
    # what kind of answer the object is ("place", "person", "organisation",
    # "time", "thing" …) — used by retrieval's answer-sufficiency checks
    object_type: str | None = None
    description: str = ""
    # a catch-all relation ("did"): its object is a loose handle ("the dance studio") and the
    # statement is what the fact says, so two facts are the same fact only when their statements
    # are (chronomem.graph.GraphWriter.key); otherwise a second statement would merely reinforce
    # the first and its words would be lost
    by_statement: bool = False


#: relations keyed by their statement when nobody defined them otherwise: extraction's catch-all
#: (chronomem.extract.observations types a statement it cannot type otherwise as ``did``)
STATEMENT_KEYED = frozenset({"did"})


def default_spec(name: str) -> RelationSpec:
    """The spec of a relation nobody defined (or defined only in part): multi-valued, and keyed by its
    statement when it is a catch-all (:data:`STATEMENT_KEYED`)."""
    return RelationSpec(name, by_statement=name in STATEMENT_KEYED)


def statement_identity(text: str) -> str:
    """What makes two statements the same statement: their words, case, spacing and end punctuation aside."""
    return " ".join(text.casefold().split()).rstrip(" .!?")


def _b(name: str, *syn: str, single: bool = False, symmetric: bool = False,
       inverse: str | None = None, obj: str | None = None, desc: str = "") -> RelationSpec:
    return RelationSpec(name, single, symmetric, inverse, tuple(syn), obj, desc)


BUILTIN_RELATIONS: tuple[RelationSpec, ...] = (
    _b("lives_in", "resides_in", "lives in", "living_in", "lives_at", "based_in", "home_is",
       "moved_to", "relocated_to",
       single=True, obj="place", desc="current place of residence"),
    _b("works_at", "employed_at", "employed_by", "works_for", "job_at", "works at",
       single=True, obj="organisation", desc="current employer"),
    _b("job_title", "works_as", "occupation", "profession", "job", "role",
       single=True, obj="role", desc="current job title or occupation"),
    _b("studies_at", "student_at", "attends", "enrolled_at", single=True,
       obj="organisation", desc="current school or university"),
    _b("married_to", "spouse_of", "wife_of", "husband_of", "spouse", single=True,
       symmetric=True, obj="person"),
    _b("partner_of", "dating", "in_relationship_with", "boyfriend_of", "girlfriend_of",
       single=True, symmetric=True, obj="person"),
    _b("sibling_of", "brother_of", "sister_of", "sibling", symmetric=True, obj="person"),
    _b("friend_of", "friends_with", "friend", symmetric=True, obj="person"),
    _b("parent_of", "mother_of", "father_of", "has_child", "has_son", "has_daughter",
       inverse="child_of", obj="person"),
    _b("child_of", "son_of", "daughter_of", "has_parent", "has_mother", "has_father",
       inverse="parent_of", obj="person"),
    _b("has_pet", "owns_pet", "pet", obj="animal"),
    _b("likes", "loves", "enjoys", "fond_of", "favorite", "favourite"),
    _b("dislikes", "hates", "does_not_like"),
    _b("owns", "has", "possesses", obj="thing"),
    _b("hobby", "has_hobby", "hobbies", "pastime", obj="activity"),
    _b("is_a", "is_an", "instance_of", "type_of", "kind_of", "isa", obj="type"),
    _b("located_in", "in_country", "part_of_region", "situated_in", obj="place"),  # in Germany and in Europe
    _b("born_in", "birthplace", "place_of_birth", single=True, obj="place"),
)


_FLAGS = ("single_valued", "symmetric", "by_statement")
_NAMES = ("inverse", "object_type")


def _checked_props(name: str, props: Mapping[str, object]) -> dict[str, Any]:
    """``define``'s keyword properties checked: known names, the right types (``synonyms`` a list of
    names, not one string whose letters would each become a synonym)."""
    unknown = sorted(set(props) - {*_FLAGS, *_NAMES, "description", "synonyms"})
    if unknown:
        raise ValidationError(f"relation.{unknown[0]}", props[unknown[0]],
                              f"unknown property of relation {name!r}; known: "
                              f"{sorted((*_FLAGS, *_NAMES, 'description', 'synonyms'))}")
    out: dict[str, Any] = dict(props)
    for key in _FLAGS:
        if key in out and not isinstance(out[key], bool):
            raise ValidationError(f"relation.{key}", out[key], "must be true or false")
    for key in _NAMES:
        if key in out and out[key] is not None and not (isinstance(out[key], str) and out[key].strip()):
            raise ValidationError(f"relation.{key}", out[key], "must be a non-empty string or None")
    if "description" in out and not isinstance(out["description"], str):
        raise ValidationError("relation.description", out["description"], "must be a string")
    if "synonyms" in out:
        given = out["synonyms"]
        syns = () if isinstance(given, str) or not isinstance(given, Iterable) else tuple(given)
        if not syns and given or not all(isinstance(x, str) and x.strip() for x in syns):
            raise ValidationError("relation.synonyms", given, "must be a list of relation names")
        out["synonyms"] = syns
    return out


@dataclass
class RelationRegistry:
    """Canonical relations and their properties; copy-on-construct, per ``Memory``.

    >>> reg = RelationRegistry()
    >>> reg.canonical("Resides in")
    'lives_in'
    >>> reg.spec("lives_in").single_valued
    True
    """

    specs: dict[str, RelationSpec] = field(default_factory=dict)
    _synonyms: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        given = list(self.specs.values())
        self.specs = {}
        self._synonyms = {}
        for spec in (*BUILTIN_RELATIONS, *given):
            self.define(spec)

    # -- definition -------------------------------------------------------
    def define(self, spec: RelationSpec | str, **props: object) -> RelationSpec:
        """Add or override a relation.  ``define("mentor_of", inverse="mentee_of")``."""
        if isinstance(spec, str):
            name = normalize_relation(spec)
            base = self.specs.get(name) or default_spec(name)
            spec = replace(base, **_checked_props(name, props))
        elif not isinstance(spec, RelationSpec):
            raise ValidationError("relation", spec, "must be a relation name or a RelationSpec")
        name = normalize_relation(spec.name)
        if name != spec.name:
            spec = replace(spec, name=name)
        if spec.symmetric and spec.inverse:
            raise ValidationError("relation", name, "cannot be both symmetric and have an inverse")
        for syn in spec.synonyms:  # checked before anything changes
            self._check_synonym(normalize_relation(syn), name)
        self.specs[name] = spec
        self._synonyms[name] = name
        for syn in spec.synonyms:
            self._synonyms[normalize_relation(syn)] = name
        if spec.inverse:
            inv = normalize_relation(spec.inverse)
            other = self.specs.get(inv)
            if other is None or other.inverse != name:
                other = replace(other or default_spec(inv), inverse=name)
                self.specs[inv] = other
                self._synonyms.setdefault(inv, inv)
        return spec

    def update(self, definitions: Iterable[Mapping[str, object]]) -> None:
        """Define relations from plain dicts (config files): ``{"name": ..., "single_valued": ...}``."""
        for d in definitions:
            if not isinstance(d, Mapping):
                raise ValidationError("relation", d, 'a relation definition is a mapping like {"name": "mentor_of"}')
            d = dict(d)
            name = d.pop("name", None)
            if not isinstance(name, str) or not name.strip():
                raise ValidationError("relation.name", name, "every relation definition needs a name")
            self.define(name, **d)

    # -- lookup -------------------------------------------------------------
    def canonical(self, name: str) -> str:
        """The canonical name for a relation or synonym; unknown names normalised as-is."""
        norm = normalize_relation(name)
        return self._synonyms.get(norm, norm)

    def spec(self, name: str) -> RelationSpec:
        canon = self.canonical(name)
        return self.specs.get(canon) or default_spec(canon)

    def is_known(self, name: str) -> bool:
        return normalize_relation(name) in self._synonyms

    def names(self) -> list[str]:
        return sorted(self.specs)

    def read_from_object(self, relation: str) -> str | None:
        """The relation a fact of ``relation`` reads as from its object's side: itself when it is
        symmetric (``sibling_of``), its inverse when it has one (``parent_of`` → ``child_of``), else
        ``None``.  Both properties are their own mirror, so the same answer says which stored relation
        a reading of ``relation`` comes from."""
        spec = self.spec(relation)
        if spec.symmetric:
            return spec.name
        if spec.inverse:
            return self.canonical(spec.inverse)
        return None

    def learn_synonym(self, synonym: str, canonical: str) -> None:
        """Record that ``synonym`` means ``canonical`` (e.g. learned from extraction)."""
        target = self.canonical(canonical)
        self._check_synonym(normalize_relation(synonym), target)
        if target not in self.specs:
            self.define(target)
        self._synonyms[normalize_relation(synonym)] = target

    def _check_synonym(self, synonym: str, name: str) -> None:
        """Refuse ``synonym`` for ``name`` when it names a relation (its stored facts would be hidden from
        queries by that name, and new ones read as ``name``) or already means another relation (that
        relation's facts would silently change name)."""
        if synonym != name and synonym in self.specs:
            raise ValidationError("relation.synonyms", synonym, f"is a relation of its own; cannot also mean {name}")
        if self._synonyms.get(synonym, name) != name:
            raise ValidationError("relation.synonyms", synonym, f"already means {self._synonyms[synonym]}")

    def key(self, subject: str, relation: str, obj: str) -> tuple[str, str, str]:
        """A direction-independent identity for a fact: symmetric facts and
        inverse pairs map to the same key, so they reinforce instead of duplicate."""
        spec = self.spec(relation)
        rel = spec.name
        if spec.symmetric and obj < subject:
            subject, obj = obj, subject
        elif spec.inverse and spec.inverse < rel:
            subject, rel, obj = obj, spec.inverse, subject
        return subject, rel, obj
