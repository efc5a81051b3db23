"""One chunk of turns → candidate facts (add_facts-shaped dicts), with one LLM call.

The model is asked for what it is good at — who/what/relation, the time
phrase *as said*, a certainty label — and code does the rest: pronoun
resolution to speakers, canonical relation names, time resolution
(:mod:`chronomem.timeexpr`), confidence (:mod:`.confidence`), intent
normalisation, provenance.  Pure functions except :meth:`Extractor.run`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import timeexpr
from ..cjk import cjk_pairs
from ..model import FactInput, Intent, Message, Origin
from ..prompts import load_prompt
from ..providers.base import LLM, CallUsage
from . import confidence
from .chunking import Chunk
from .schema import EXTRACTION_SCHEMA, MAX_FACTS_PER_CHUNK, ExtractedFact, parse_output

log = logging.getLogger(__name__)

PROMPT_VERSION = "extract_v3"
#: Bump when :func:`postprocess` keeps, drops or rewrites different facts from the same model
#: output (benchmarks key their ingested memories on it).  2: photo-sharing and non-pet has_pet
#: facts dropped.
POSTPROCESS_VERSION = 2
# v1 (kept for reference): the relation list read as a template to fill; on a LoCoMo chunk
# about feelings and a support group the 1.5B model wrote twelve "<name> has_pet unknown"
# facts.  v2 asks for relations in the speaker's words and forbids "unknown", but still listed
# the registry names: on the same chunk it wrote "lives_in unknown" / "works_at unknown" for both
# speakers and repeated one image caption five times.  v3 drops the list (relation names are
# canonicalised in code: registry synonyms + EXTRACTION_SYNONYMS) and says what to do instead.
MAX_TOKENS = 900  # ≈ 12 facts × 55 tokens + slack; the grammar caps the array


def system_prompt(relations: Sequence[str], version: str = PROMPT_VERSION) -> str:
    """The system prompt with the registry's relation names filled in.

    It is identical for every chunk of a memory, so llama.cpp reuses its KV
    cache across calls (only the transcript is new prompt work).
    """
    rels = ", ".join(r for r in relations if r)
    return load_prompt("chronomem.extract", version).replace("{{relations}}", rels)


def render_transcript(chunk: Chunk[Message]) -> tuple[str, dict[int, Message]]:
    """The user message for one chunk and the map from turn numbers to messages.

    Context turns are numbered too (continuity helps the model) but only
    numbers under "Turns" map to messages facts may cite.
    """
    speakers = list(dict.fromkeys(m.speaker for m in chunk.all))
    lines = [f"Speakers: {', '.join(speakers)}"]
    n = 0
    if chunk.context:
        lines.append("Context:")
        for m in chunk.context:
            lines.append(f"[{n}] {m.speaker}: {_one_line(m.text)}")
            n += 1
    lines.append("Turns:")
    numbered: dict[int, Message] = {}
    for m in chunk.turns:
        lines.append(f"[{n}] {m.speaker}: {_one_line(m.text)}")
        numbered[n] = m
        n += 1
    return "\n".join(lines), numbered


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# ----------------------------------------------------------------- post-processing

# "we"/"our" are read as the speaker: "we had to rehome Pixel" is about the speaker's household
_SELF = {"i", "me", "my", "myself", "mine", "i'm", "im", "we", "us", "ourselves"}
_OTHER = {"you", "your", "yourself", "yours", "u"}
# relations about the conversation itself, not about anyone's life ("Sam asks Maya"): small talk
_DIALOGUE_RELATIONS = {"asks", "asked", "answers", "answered", "says", "said", "tells", "told", "replies",
                       "replied", "greets", "greeted", "talks_to", "talked_to", "speaks_to", "responds_to",
                       "thanks", "thanked", "congratulates", "congratulated", "asks_about", "chats_with"}
# "[shares an image: …]" read as a fact about sharing ("Jon shared_image a photo of …"): the photo's
# content may matter, the act of sharing it in the chat does not
_PHOTO_RELATION = re.compile(r"^(?:share|shares|shared|sharing|send|sends|sent|post|posts|posted|show|shows|showed)"
                             r"(?:_(?:a|an|the))?_(?:image|images|photo|photos|picture|pictures|pic|pics)$")
_PHOTO_OBJECT = re.compile(r"^(?:a |an |the )?(?:photo|image|picture|pic)\b", re.IGNORECASE)
_SHARE_VERBS = {"share", "shares", "shared", "sharing", "sends", "sent", "posts", "posted", "shows", "showed"}


def is_photo_sharing(relation: str, obj: str) -> bool:
    """``shares_an_image <anything>`` or ``shares a photo of …``: the chat's act of sharing, not a fact."""
    return bool(_PHOTO_RELATION.match(relation)) or (relation in _SHARE_VERBS and bool(_PHOTO_OBJECT.match(obj)))


# has_pet is the relation a small model reaches for as a generic "has" ("Jon has_pet pink sign",
# "Gina has_pet online store"): its object must be an animal word or a pet's name
_ANIMALS = frozenset("""
    animal pet dog puppy pup cat kitten kitty bird parrot parakeet budgie canary cockatiel finch hamster
    guinea pig rabbit bunny mouse mice rat ferret chinchilla gerbil hedgehog fish goldfish betta turtle
    tortoise snake lizard gecko iguana chameleon frog horse pony donkey goat sheep lamb cow pig chicken
    hen duck goose alpaca llama retriever labrador lab poodle beagle terrier bulldog shepherd husky
    corgi dachshund chihuahua pug spaniel collie doodle labradoodle tabby siamese persian
""".split())


def plausible_pet(obj: str, speakers: Sequence[str] = ()) -> bool:
    """Can ``obj`` be a pet: an animal word ("golden retriever", "two cats") or a name ("Pixel")?

    Speakers are never pets.  Any other phrase ("pink sign", "business plan",
    "dance studio") is the model using ``has_pet`` as a generic "has".
    """
    words = re.findall(r"[A-Za-z]+", obj)
    if not words or obj.strip().lower() in {s.lower() for s in speakers}:
        return False
    if any(w.lower() in _ANIMALS or (w.lower().endswith("s") and w.lower()[:-1] in _ANIMALS) for w in words):
        return True
    return len(words) <= 3 and all(w[0].isupper() for w in words)  # a name: Pixel, Mr Whiskers


_JUNK_OBJECTS = {"", "none", "null", "nothing", "unknown", "n/a", "something", "it", "this", "that", "they"}
_CAUSAL_RELATIONS = re.compile(r"(?:^|_)(?:caused_by|because|because_of|due_to|reason|causes|led_to|result_of)(?:_|$)")


# What small models write for a change of state, mapped to the registry relation holding the
# state (applied only when the registry does not know the name itself).
EXTRACTION_SYNONYMS: dict[str, str] = {
    "moved_to": "lives_in", "relocated_to": "lives_in", "moved_into": "lives_in", "lives": "lives_in",
    "got_job_at": "works_at", "joined": "works_at", "started_working_at": "works_at",
    "started_job_at": "works_at", "new_job_at": "works_at", "hired_by": "works_at",
    "is_employed_at": "works_at", "adopted": "has_pet", "has_dog": "has_pet", "has_cat": "has_pet",
    "owns_dog": "has_pet", "owns_cat": "has_pet",
}  # fmt: skip
# Relations that say a state *ended*: mapped to that state with ended=True.
ENDING_SYNONYMS: dict[str, str] = {
    "rehomed": "has_pet", "gave_away": "has_pet", "gave_up": "has_pet", "lost_pet": "has_pet",
    "moved_from": "lives_in", "moved_out_of": "lives_in", "moved_away_from": "lives_in",
    "left_city": "lives_in", "quit": "works_at", "quit_job_at": "works_at", "left_job_at": "works_at",
    "resigned_from": "works_at", "fired_from": "works_at", "laid_off_from": "works_at",
    "sold": "owns", "broke_up_with": "partner_of", "divorced": "married_to",
}  # fmt: skip


def canonical_relation(name: str, registry: Any) -> str:
    """Registry canonical name, with :data:`EXTRACTION_SYNONYMS` for names it does not know."""
    from ..registry import normalize_relation

    norm = normalize_relation(name)
    if not registry.is_known(norm) and norm in EXTRACTION_SYNONYMS:
        norm = EXTRACTION_SYNONYMS[norm]
    return registry.canonical(norm)


SUBJECT_NOT_GROUNDED = "dropped fact about someone the turns do not mention"
# third-person pronouns the extractor cannot resolve: whom "he" means is the model's guess
_UNRESOLVED = {"he", "she", "him", "her", "they", "them", "it", "his", "hers", "their", "theirs",
               "someone", "somebody", "everyone", "people"}


def subject_grounded(raw: str, subject: str, speakers: Sequence[str], chunk_words: set[str]) -> bool:
    """Is a fact's subject someone or something the chunk talks about?

    Yes for a speaker, a first/second-person reference resolved to one ("I",
    "you", "my son" → "Anna's son"), and a name or phrase at least half of
    whose words are said in the chunk (its turns, context or speaker names).
    No for a person the chunk never mentions ("Barack Obama lives_in Porto"
    from "I live in Porto") and for an unresolved "he"/"they".
    """
    low = raw.strip().lower()
    if low in _SELF or low in _OTHER or re.match(r"^(?:my|our|your)\s", low):
        return True
    if subject.strip().lower() in {s.lower() for s in speakers}:
        return True
    if low in _UNRESOLVED:
        return False
    words = _words(subject) or _tokens(subject)  # a short name ("Al") has no long words
    return bool(words) and 2 * _hits(words, chunk_words) >= len(words)


def _tokens(text: str) -> set[str]:
    """Every word of ``text``, lower-cased, possessive ``'s`` removed (no length or stopword filter); a run of
    Chinese, Japanese or Korean characters as its pairs of characters (:func:`~chronomem.cjk.cjk_pairs`)."""
    return set(re.findall(r"[a-z0-9]+", re.sub(r"'s\b", "", text.lower()))) | set(cjk_pairs(text))


def resolve_person(name: str, speaker: str, other: str | None) -> str:
    """Replace first/second-person references by speaker names.

    "I"/"me" → the speaker; "you" → the other speaker (when the chunk has
    exactly one other); "my son" → "Anna's son"; "your dog" → "Ben's dog".
    """
    s = name.strip()
    low = s.lower()
    if low in _SELF:
        return speaker
    if low in _OTHER and other:
        return other
    m = re.match(r"^(my|our|your)\s+(.+)$", s, flags=re.IGNORECASE)
    if m:
        owner = other if m.group(1).lower() == "your" else speaker
        if owner:
            return f"{owner}'s {m.group(2)}"
    return s


def render(subject: str, relation: str, obj: str, time_text: str, ended: bool) -> str:
    """One-line natural-language rendering kept with the fact."""
    base = f"{subject} {relation.replace('_', ' ')} {obj}"
    if ended:
        base += " (ended)"
    if time_text:
        base += f" [{time_text}]"
    return base


def postprocess(
    facts: Sequence[ExtractedFact],
    numbered: dict[int, Message],
    *,
    canonical: Callable[[str], str] = lambda r: r,
    context_speakers: Sequence[str] = (),
    context_texts: Sequence[str] = (),
) -> tuple[list[FactInput], list[str]]:
    """Turn the model's facts into :class:`FactInput` records; returns ``(facts, notes)``.

    Drops facts that cite only context turns or nothing usable, facts about
    someone the chunk never mentions (:func:`subject_grounded`), junk objects
    and self-loops; deduplicates within the chunk.
    """
    notes: list[str] = []
    speakers = list(dict.fromkeys([*context_speakers, *(m.speaker for m in numbered.values())]))
    chunk_words = set().union(*(_tokens(t) for t in [*context_texts, *(m.text for m in numbered.values()),
                                                     *speakers]))
    out: list[FactInput] = []
    seen: set[tuple[str, str, str, bool]] = set()
    for f in facts:
        msgs = ground(f, numbered, speakers)
        if not msgs:
            notes.append(f"dropped fact not grounded in the turns: {f.subject} {f.relation} {f.object}")
            continue
        first = msgs[0]
        others = [s for s in speakers if s != first.speaker]
        other = others[0] if len(others) == 1 else None
        subject = resolve_person(f.subject, first.speaker, other)
        if not subject_grounded(f.subject, subject, speakers, chunk_words):
            notes.append(f"{SUBJECT_NOT_GROUNDED}: {f.subject} {f.relation} {f.object}")
            continue
        obj = resolve_person(f.object, first.speaker, other)
        if obj.lower() in _JUNK_OBJECTS or not subject or subject.lower() == obj.lower():
            continue
        clause = confidence.relevant_clause(first.text, f.object) or first.text.lower()
        if (subject in speakers and subject != first.speaker and obj not in speakers
                and subject.lower() not in clause):
            # the model resolved "I" to the wrong speaker: the clause that says it is
            # first.speaker's and does not name the other speaker ("Hi Sam! I live in Berlin")
            notes.append(f"subject {subject!r} → {first.speaker!r} (the speaker of the line)")
            subject = first.speaker
        ended = f.ended
        rel_raw = f.relation
        rel_norm = re.sub(r"[^0-9a-z]+", "_", rel_raw.lower()).strip("_")
        if rel_norm in ENDING_SYNONYMS:
            rel_raw, ended = ENDING_SYNONYMS[rel_norm], True
        try:
            relation = canonical(rel_raw)
        except Exception:  # registry rejects it (e.g. only punctuation)
            notes.append(f"dropped fact with unusable relation {f.relation!r}")
            continue
        if relation in _DIALOGUE_RELATIONS or is_photo_sharing(relation, obj):
            notes.append(f"dropped small talk about the conversation: {subject} {relation} {obj}")
            continue
        if relation == "has_pet" and not plausible_pet(obj, speakers):
            notes.append(f"dropped has_pet whose object is no animal or pet name: {subject} has_pet {obj}")
            continue
        if subject.lower() == obj.lower():  # a self-loop again after the speaker fix above
            continue
        key = (subject.lower(), relation, obj.lower(), ended)
        if key in seen:
            continue
        seen.add(key)
        ref = first.timestamp
        valid_from, valid_to = timeexpr.resolve_validity(f.time or None, ref, ended=ended)
        source_text = " ".join(m.text for m in msgs)
        conf = confidence.score(f.certainty, source_text, obj, relation)
        intent = _intent(f, relation, ended)
        out.append(
            FactInput(
                subject=subject,
                relation=relation,
                object=obj,
                valid_from=valid_from,
                valid_to=valid_to,
                confidence=conf,
                intent=intent,
                source_ids=[m.id for m in msgs],
                session_id=first.session_id,
                text=render(subject, relation, obj, f.time, ended),
                origin=Origin.STATED,
                subject_type="person" if subject in speakers else None,
                object_type="person" if obj in speakers else None,
            )
        )
    return _one_speaker_per_turn_fact(out, numbered, speakers, notes), notes


def _one_speaker_per_turn_fact(
    cands: list[FactInput], numbered: dict[int, Message], speakers: Sequence[str], notes: list[str]
) -> list[FactInput]:
    """The 1.5B model often copies a fact to both speakers ("Caroline talked_about X",
    "Melanie talked_about X" from Caroline's line).  When the same relation and object,
    grounded in the same turn, is given to several speakers, keep the turn's speaker."""
    speaker_of = {m.id: m.speaker for m in numbered.values()}
    groups: dict[tuple[str, str, tuple[str, ...]], list[FactInput]] = {}
    for c in cands:
        groups.setdefault((c.relation, c.object.lower(), tuple(c.source_ids)), []).append(c)
    drop: set[int] = set()
    for (_, _, src), group in groups.items():
        subjects = {c.subject for c in group}
        if len(group) < 2 or not subjects <= set(speakers):
            continue
        own = [c for c in group if src and c.subject == speaker_of.get(src[0])]
        if own:
            for c in group:
                if c not in own:
                    drop.add(id(c))
                    notes.append(f"dropped copy for the other speaker: {c.text}")
    return [c for c in cands if id(c) not in drop]


_STOPWORDS = {"a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "with", "my", "your",
              "is", "are", "was", "his", "her", "their", "our", "its", "new", "old"}


def _words(text: str) -> set[str]:
    """Content words of ``text``: what grounds a statement in a turn.  A run of Chinese, Japanese or Korean
    characters counts as its pairs of characters: without them a statement in those languages shared no word
    with its turn, and every fact the model read from one was dropped as unsupported."""
    text = re.sub(r"'s\b", "", text.lower())
    return {w for w in re.findall(r"[a-z0-9]+", text) if (len(w) >= 3 or w.isdigit()) and w not in _STOPWORDS} \
        | set(cjk_pairs(text))


def _hits(words: set[str], turn_words: set[str]) -> int:
    """Words found in a turn, exactly or by a shared 5-letter stem ("parrots"/"parrot", "allergic"/"allergy")."""
    n = 0
    for w in words:
        if (w in turn_words or f"{w}s" in turn_words or f"{w}es" in turn_words
                or (len(w) >= 5 and any(len(t) >= 5 and t[:5] == w[:5] for t in turn_words))):
            n += 1
    return n


def _only_asked(text: str, words: set[str]) -> bool:
    """True when every sentence of ``text`` that mentions ``words`` is a question."""
    sentences = re.findall(r"[^.!?]+[.!?]*", text)
    mentioning = [x for x in sentences if _hits(words, _words(x))]
    return bool(mentioning) and all(x.strip().endswith("?") for x in mentioning)


def ground(f: ExtractedFact, numbered: dict[int, Message], speakers: Sequence[str] = ()) -> list[Message]:
    """The turn a fact comes from, found by its words; ``[]`` when no turn mentions its object.

    The object must be said in some turn of the chunk (a speaker's name counts
    when that speaker talks in the chunk); among the turns mentioning it, the
    one that also mentions the subject, or is spoken by the subject, wins;
    ties go to the earliest.  This is both provenance and a hallucination
    filter: a model that adds "Porto located_in Portugal" or "SAP is_a
    company" to a chunk that never says "Portugal" or "company" is dropped.
    """
    obj_words = _words(f.object)
    subj_words = _words(f.subject)
    speakers_low = {s.lower() for s in speakers}
    best: Message | None = None
    best_score = 0.0
    for m in numbered.values():
        tw = _words(m.text)
        hit = _hits(obj_words, tw) / len(obj_words) if obj_words else 0.0
        if not hit and f.object.strip().lower() in speakers_low and f.object.strip().lower() != m.speaker.lower():
            hit = 0.5  # "Tom friend_of Maya" said by Tom to Maya
        if not hit:
            continue
        if _only_asked(m.text, obj_words):
            hit *= 0.3  # "Wow, why Munich?" does not state the fact; the answer does
        subj = _hits(subj_words, tw) / len(subj_words) if subj_words else 0.0
        if f.subject.strip().lower() == m.speaker.lower() or f.subject.strip().lower() in _SELF:
            subj = max(subj, 1.0)
        score = hit + 0.5 * subj
        if score > best_score:
            best, best_score = m, score
    return [best] if best is not None else []


def _intent(f: ExtractedFact, relation: str, ended: bool) -> Intent:
    if _CAUSAL_RELATIONS.search(relation):
        return Intent.CAUSAL
    if ended:
        return Intent.EVOLUTION
    return Intent(f.intent)


# ----------------------------------------------------------------- the call


@dataclass(slots=True)
class ChunkResult:
    candidates: list[FactInput] = field(default_factory=list)
    usage: CallUsage | None = None
    notes: list[str] = field(default_factory=list)
    raw: str = ""


class Extractor:
    """Runs the one structured LLM call per chunk."""

    def __init__(
        self,
        llm: LLM,
        *,
        relations: Sequence[str] = (),
        canonical: Callable[[str], str] = lambda r: r,
        prompt_version: str = PROMPT_VERSION,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.llm = llm
        self.canonical = canonical
        self.prompt_version = prompt_version
        self.system = system_prompt(relations, prompt_version)
        self.max_tokens = max_tokens

    def head(self) -> list[dict[str, str]]:
        """The messages every extraction call starts with (the system prompt): what a local
        model can prefill (:meth:`~chronomem.extract.pipeline.WritePipeline.warm`)."""
        return [{"role": "system", "content": self.system}]

    def messages_for(self, chunk: Chunk[Message]) -> tuple[list[dict[str, str]], dict[int, Message]]:
        transcript, numbered = render_transcript(chunk)
        return (
            [*self.head(), {"role": "user", "content": transcript}],
            numbered,
        )

    def run(self, chunk: Chunk[Message]) -> ChunkResult:
        """Extract one chunk.  Raises :class:`~chronomem.errors.StructuredOutputError`
        (after the provider's repair/retry budget) or ``pydantic.ValidationError``."""
        messages, numbered = self.messages_for(chunk)
        res = self.llm.chat(
            messages,
            schema=EXTRACTION_SCHEMA,
            max_tokens=self.max_tokens,
            temperature=0.0,
            purpose="extract",
        )
        parsed = parse_output(res.data)
        distinct = {(f.subject.lower(), f.relation.lower(), f.object.lower()) for f in parsed.facts}
        if len(parsed.facts) >= 4 and len(distinct) <= len(parsed.facts) // 2:
            log.warning("degenerate extraction output (%d facts, %d distinct)", len(parsed.facts), len(distinct))
        if len(parsed.facts) >= MAX_FACTS_PER_CHUNK:
            log.info("chunk hit the %d-fact cap; consider a smaller chunk size", MAX_FACTS_PER_CHUNK)
        cands, notes = postprocess(
            parsed.facts,
            numbered,
            canonical=self.canonical,
            context_speakers=[m.speaker for m in chunk.context],
            context_texts=[m.text for m in chunk.context],
        )
        return ChunkResult(candidates=cands, usage=res.usage, notes=notes, raw=res.text)
