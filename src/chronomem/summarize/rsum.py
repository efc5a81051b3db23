"""Recursive summarisation ("Rsum", Wang et al., arXiv 2308.15022).

After every session the user's memory is rewritten from the previous memory
and the new session::

    M_i = LLM(S_i, M_{i-1}, P_m),   M_0 = "none"

and a reply is generated from the latest memory and the current context::

    r_t = LLM(C_t, M_N, P_r)

``P_m`` (``prompts/rsum_memory_v2.md``) follows the paper's structure: task
definition, a four-step procedure, the sentence cap, then the inputs. ``P_r``
(``prompts/rsum_reply_v1.md``) is a five-step "extract, then use" procedure.
Every call runs at temperature 0.  The sentence cap is also enforced in code.

Small models at temperature 0 fall into loops in the memory update, writing the
same sentences again until the token limit (the 1.5B local model did on 44 % of
MSC's updates), or go on writing the session's dialogue after the memory.  The
update therefore asks for a repetition penalty (:data:`MEMORY_PENALTIES`), stops
at a line that opens with a speaker's name and a colon (dialogue, which the code
would cut anyway), and caps the generation in proportion to the memory it
rewrites (:func:`generation_cap`); repeated sentences that still come out are
dropped in code.

Small models also tend to copy the previous memory back and stop, so the memory stops
learning after its first session.  ``decoding=3`` (opt-in, :data:`MEMORY_DECODINGS`) asks,
once there is a memory, only for what the session adds (``prompts/rsum_memory_new_v1.md``),
appends it, and rewrites with ``P_m`` only when the memory outgrows its sentence cap.

Each ``M_i`` is stored as a :class:`~chronomem.model.Checkpoint` (``seq = i``),
so the memory as it was after any session is available (:meth:`RsumMemory.summary`
with ``as_of``) and a forgotten session can be replayed out of the chain
(:meth:`RsumMemory.replay`).  Forgetting a session leaves a gap in the chain and erases the
texts of the checkpoints after it at once (:func:`erase_after_gap`); nothing past the gap is
read (:func:`first_gap`) until the replay, a job of its own, has rewritten them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from ..config import RSUM_DECODING, RSUM_DECODINGS
from ..validation import check_id
from ..errors import ChronomemError, ValidationError
from ..model import Checkpoint, Message
from ..providers.base import LLM, CallUsage, ChatResult, Messages, Penalties
from ..timeutil import parse_time, utcnow
from ..prompts import load_prompt
from .text import (
    cap_sentences,
    clean_model_text,
    drop_repeated_sentences,
    format_transcript,
    format_turn,
    render_prompt,
    session_header,
    split_sentences,
)

__all__ = [
    "NO_MEMORY",
    "DEFAULT_MAX_SENTENCES",
    "MEMORY_PROMPT",
    "MEMORY_POSTPROCESS",
    "REPLY_PROMPT",
    "RsumStore",
    "MemoryUpdate",
    "RsumMemory",
    "MEMORY_DECODING",
    "MEMORY_DECODINGS",
    "MEMORY_APPEND_PROMPT",
    "MEMORY_PENALTIES",
    "MAX_STOP_SPEAKERS",
    "build_memory_messages",
    "erase_after_gap",
    "build_reply_messages",
    "generation_cap",
    "update_memory",
    "generate_reply",
]

log = logging.getLogger(__name__)

NO_MEMORY = "none"  # M_0, as in the paper
DEFAULT_MAX_SENTENCES = 20
#: How often an update recomputes a memory when racing ``end_session`` calls changed the chain first.
MAX_CHAIN_RETRIES = 8
MEMORY_PROMPT = "rsum_memory_v2"
#: What the code does to the model's memory text: 1 = dialogue lines removed, sentence cap;
#: 2 = also repeated sentences dropped before the cap (a memory written by a model in a loop).
MEMORY_POSTPROCESS = 2
#: How the memory update is generated (``decoding=`` of :func:`update_memory` and :class:`RsumMemory`):
#: 1 = greedy, up to 32 tokens per allowed sentence + 64; 2 (the default) = greedy with
#: :data:`MEMORY_PENALTIES`, up to :func:`generation_cap` tokens, stopped at a dialogue line
#: (``"\n<speaker>:"``, the first :data:`MAX_STOP_SPEAKERS` speakers); 3 (opt-in) = decoding 2 for the
#: first memory, then **append**: the model writes only what a session adds
#: (:data:`MEMORY_APPEND_PROMPT`, at most :data:`APPEND_SENTENCES` sentences), the code appends it
#: and drops what repeats the memory, and Rsum's rewrite runs only when the memory outgrows its cap
#: (BENCHMARKS.md, "Rsum: append instead of rewrite").  1 sends exactly the calls it used to, so its
#: saved response caches replay.
MEMORY_DECODING = RSUM_DECODING  # 2
MEMORY_DECODINGS = RSUM_DECODINGS  # (1, 2, 3): Config.rsum_decoding takes the same values
#: The prompt of an append step (``decoding=3``): the memory as what is kept, then the session.
MEMORY_APPEND_PROMPT = "rsum_memory_new_v1"
#: The repetition penalty of a memory update (``MEMORY_DECODING`` 2).  Chosen on four looping
#: updates of MSC episodes outside the first eight (test_71, test_77, test_80, test_83) among
#: frequency 0.5, repeat 1.15 and this: it stopped the loops and wrote the fewest tokens.  llama.cpp
#: counts the last 64 tokens; OpenAI counts the whole generation, where a memory naming the same
#: speaker in every sentence is penalised more (``decoding=1`` sends none, for a strong remote model).
MEMORY_PENALTIES = Penalties(frequency=0.3, presence=0.5)
#: Stop sequences are sent for this many speakers at most (OpenAI accepts four).
MAX_STOP_SPEAKERS = 4
REPLY_PROMPT = "rsum_reply_v1"
_TOKENS_PER_SENTENCE = 32  # generation allowance per memory sentence (the cap's upper bound)
_SHORT_SENTENCE_TOKENS = 16  # a full memory of short sentences: the cap's lower bound per sentence
_NEW_SENTENCE_TOKENS = 20  # room for one new sentence in a rewrite, on top of the memory's own length
_NEW_SENTENCES = 10  # new sentences one update may add beyond the memory it rewrites
#: Most sentences one append step (``decoding=3``) may write.
APPEND_SENTENCES = _NEW_SENTENCES
_CAP_MARGIN = 32  # tokens for the answer's preamble and line breaks
_PROMPT_MARGIN = 32  # tokens kept free for the chat template around the prompt


class RsumStore(Protocol):
    """The part of the long-term store Rsum needs."""

    def put_checkpoint(self, cp: Checkpoint) -> None: ...

    def checkpoints(self, user_id: str) -> list[Checkpoint]: ...

    def delete_checkpoints(self, user_id: str, from_seq: int) -> Any: ...

    def messages(self, user_id: str, *, session_id: str | None = None) -> list[Message]: ...


@dataclass(slots=True)
class MemoryUpdate:
    """Result of one memory rewrite ``M_i`` (possibly several calls for a long session)."""

    memory: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dropped_sentences: int = 0  # sentences beyond the cap that the code removed
    echoed_lines: int = 0  # dialogue lines ("Name: …") copied into the answer and removed
    repeated_sentences: int = 0  # sentences that repeated an earlier one and were removed
    usages: list[CallUsage] = field(default_factory=list)


# --------------------------------------------------------------------------- prompts


def _most_talkative(session_text: str, names: Sequence[str]) -> str:
    """The speaker who said the most: the one the example sentence names (the 1.5B model
    otherwise writes facts about whoever spoke first, often the one asking questions)."""
    words = {n: 0 for n in names}
    for line in session_text.splitlines():
        who, sep, said = line.partition(":")
        if sep and who.strip() in words:
            words[who.strip()] += len(said.split())
    return max(names, key=lambda n: words[n])


def build_memory_messages(
    session_text: str,
    previous_memory: str,
    *,
    max_sentences: int = DEFAULT_MAX_SENTENCES,
    session_time: datetime | None = None,
    speakers: Sequence[str] | None = None,
    prompt: str = MEMORY_PROMPT,
) -> Messages:
    """The chat messages of one memory update ``P_m(S_i, M_{i-1})``.

    ``speakers`` (default: read from the ``"Name: text"`` lines of the
    transcript) are named in the instructions, so that every memory sentence
    says whom it is about.
    """
    _check_max_sentences(max_sentences)
    names = list(speakers) if speakers is not None else speakers_of(session_text)
    text = render_prompt(
        load_prompt("chronomem.summarize", prompt),
        max_sentences=max_sentences,
        new_sentences=min(APPEND_SENTENCES, max_sentences),  # the append prompt's cap (decoding 3)
        previous_memory=previous_memory.strip() or NO_MEMORY,
        session=session_text.strip(),
        session_header=session_header(session_time),
        speakers=_join_names(names) if names else "the names used in the transcript",
        first_speaker=_most_talkative(session_text, names) if names else "Name",
    )
    return [{"role": "user", "content": text}]


def drop_dialogue_lines(text: str, speakers: Sequence[str]) -> tuple[str, int]:
    """Cut the answer at the first ``"<speaker>: "`` marker: transcript copied back, not memory.

    Small models sometimes write the memory and then continue with the
    session's dialogue (on new lines or on the same line).  Everything from
    the first dialogue marker on is dropped.  Returns the remaining text and
    how many dialogue turns (markers) were removed.
    """
    if not speakers:
        return text, 0
    names = "|".join(re.escape(n) for n in sorted(speakers, key=len, reverse=True))
    marker = re.compile(rf"(?:^|(?<=\s))(?:{names})\s*:\s", re.IGNORECASE | re.MULTILINE)
    found = list(marker.finditer(text))
    if not found:
        return text, 0
    return text[: found[0].start()].rstrip(), len(found)


def speakers_of(transcript: str) -> list[str]:
    """Speaker names in order of first appearance in ``"Name: text"`` lines."""
    names = (ln.split(": ", 1)[0].strip() for ln in transcript.splitlines() if ": " in ln)
    return list(dict.fromkeys(n for n in names if n and len(n) <= 64))


def _join_names(names: Sequence[str]) -> str:
    quoted = [f'"{n}"' for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def build_reply_messages(
    context: Sequence[Message | Mapping[str, Any]],
    memory: str,
    *,
    speaker: str = "assistant",
    evidence: str | None = None,
    prompt: str = REPLY_PROMPT,
) -> Messages:
    """The chat messages of one reply ``P_r(C_t, M_N)``.

    ``context`` is the current conversation (chat dicts or :class:`Message`);
    ``evidence`` is optional extra material (e.g. REAL's serialised subgraph for
    the hybrid ``real+rsum`` answerer).
    """
    if not context:
        raise ValidationError("context", context, "the current conversation is empty")
    if not speaker.strip():
        raise ValidationError("speaker", speaker, "must be a non-empty name")
    evidence_block = f"\nAdditional evidence:\n{evidence.strip()}\n" if evidence and evidence.strip() else ""
    text = render_prompt(
        load_prompt("chronomem.summarize", prompt),
        speaker=speaker.strip(),
        memory=memory.strip() or NO_MEMORY,
        evidence_block=evidence_block,
        context=format_transcript(context),
    )
    return [{"role": "user", "content": text}]


# --------------------------------------------------------------------------- model calls


def generation_cap(llm: LLM, memory: str, max_sentences: int = DEFAULT_MAX_SENTENCES) -> int:
    """Most tokens one memory update may generate: the memory it rewrites plus room for new sentences.

    The rewrite is the previous memory with the session's new facts, so its length follows the
    memory's: ``tokens(memory) + 20 × min(10, max_sentences)``, but never less than a full memory of
    short sentences (16 tokens each), plus 32 for line breaks and preambles; at most the allowance
    of a full memory (32 tokens per sentence + 64).  A model that loops stops there instead of at
    the full allowance.  (On MSC with the 1.5B model no update that did not loop wrote a memory
    longer than 307 tokens; the cap is 352 for a memory up to 120 tokens.)
    """
    _check_max_sentences(max_sentences)
    ceiling = _full_allowance(max_sentences)
    current = 0 if memory.strip() in ("", NO_MEMORY) else llm.count_tokens(memory)
    rewrite = max(current + _NEW_SENTENCE_TOKENS * min(_NEW_SENTENCES, max_sentences),
                  _SHORT_SENTENCE_TOKENS * max_sentences)
    return min(ceiling, rewrite + _CAP_MARGIN)


def update_memory(
    llm: LLM,
    session: Sequence[Message | Mapping[str, Any]],
    previous_memory: str = NO_MEMORY,
    *,
    max_sentences: int = DEFAULT_MAX_SENTENCES,
    session_time: datetime | None = None,
    max_tokens: int | None = None,
    prompt: str = MEMORY_PROMPT,
    decoding: int = MEMORY_DECODING,
) -> MemoryUpdate:
    """``M_i = LLM(S_i, M_{i-1}, P_m)`` at temperature 0, capped at ``max_sentences``.

    A session too long for the model's context window is fed in consecutive
    chunks, each one a recursive update of the memory (the paper's recursion
    at a finer grain).  An empty model answer keeps the previous memory (and
    is logged): forgetting everything because of one bad generation would be
    worse.

    ``decoding`` (:data:`MEMORY_DECODING`): from 2 on, each call asks for
    :data:`MEMORY_PENALTIES`, generates at most :func:`generation_cap` tokens of the
    memory it rewrites and stops where a line opens with a speaker's name and a colon
    (so ``echoed_lines`` counts only the dialogue that slipped past the stop).  An
    explicit ``max_tokens`` is every call's cap in every revision.

    ``decoding=3`` appends instead of rewriting once there is a memory: the model is asked
    only for what the session adds (``prompt`` still writes the first memory), its sentences
    go after the memory's, those that repeat a memory sentence are dropped (counted in
    ``repeated_sentences``), and when the result has more than ``max_sentences`` sentences
    one rewrite with ``prompt`` merges it back under the cap (then the cap is enforced).
    """
    _check_max_sentences(max_sentences)
    _check_decoding(decoding)
    if not session:
        raise ValidationError("session", session, "no turns to summarise")
    memory = previous_memory.strip() or NO_MEMORY
    out = MemoryUpdate(memory=memory)
    speakers = speakers_of(format_transcript(session))
    penalties = MEMORY_PENALTIES if decoding >= 2 else None
    # a line opening with "<speaker>:" is dialogue that drop_dialogue_lines would cut from there on
    stop = ([f"\n{name}:" for name in speakers[:MAX_STOP_SPEAKERS]] or None) if decoding >= 2 else None
    # the chunks leave room for the longest generation any of them may ask for (the full allowance)
    room_tokens = max_tokens or _full_allowance(max_sentences)
    prompts = (prompt, MEMORY_APPEND_PROMPT) if decoding >= 3 else (prompt,)
    for chunk in _chunks(llm, session, memory, max_sentences, session_time, room_tokens, prompts, speakers):
        call = _MemoryCall(llm, out, chunk, max_sentences, session_time, speakers, stop, penalties)
        if decoding >= 3 and memory != NO_MEMORY:
            kept = call(MEMORY_APPEND_PROMPT, memory, max_tokens or _append_cap(max_sentences), append=True)
            if len(split_sentences(kept)) > max_sentences:
                log.info("rsum: the memory outgrew %d sentences; rewriting it", max_sentences)
                kept = call(prompt, kept, max_tokens or generation_cap(llm, kept, max_sentences)) or kept
        else:
            kept = call(prompt, memory,
                        max_tokens or (generation_cap(llm, memory, max_sentences) if decoding >= 2 else room_tokens))
        capped, dropped = cap_sentences(kept, max_sentences)
        if not capped.strip():
            log.warning("rsum: the model returned an empty memory; keeping the previous one")
            continue
        if dropped:
            log.info("rsum: dropped %d sentences beyond the cap of %d", dropped, max_sentences)
        out.dropped_sentences += dropped
        memory = capped
    out.memory = memory
    return out


@dataclass(slots=True)
class _MemoryCall:
    """The model calls of one chunk of a session: each returns the memory text the model wrote
    (after ``previous`` when ``append``), dialogue cut and repeated sentences dropped, and adds its
    cost to ``out``."""

    llm: LLM
    out: MemoryUpdate
    chunk: str
    max_sentences: int
    session_time: datetime | None
    speakers: list[str]
    stop: list[str] | None
    penalties: Penalties | None

    def __call__(self, prompt: str, previous: str, max_tokens: int, *, append: bool = False) -> str:
        messages = build_memory_messages(self.chunk, previous, max_sentences=self.max_sentences,
                                         session_time=self.session_time, speakers=self.speakers, prompt=prompt)
        res = self.llm.chat(messages, max_tokens=max_tokens, temperature=0.0, stop=self.stop, purpose="rsum",
                            penalties=self.penalties)
        out = self.out
        out.calls += 1
        out.prompt_tokens += res.usage.prompt_tokens
        out.completion_tokens += res.usage.completion_tokens
        out.usages.append(res.usage)
        text, echoed = drop_dialogue_lines(clean_model_text(res.text), self.speakers)
        if echoed:
            log.info("rsum: removed %d dialogue lines the model copied into the memory", echoed)
        out.echoed_lines += echoed
        if append:  # the new sentences go after the memory's
            text = f"{previous}\n{text}" if text.strip() else previous
        text, repeated = drop_repeated_sentences(text)
        if repeated:
            log.info("rsum: removed %d sentences that repeat earlier ones", repeated)
        out.repeated_sentences += repeated
        return text


def generate_reply(
    llm: LLM,
    context: Sequence[Message | Mapping[str, Any]],
    memory: str,
    *,
    speaker: str = "assistant",
    evidence: str | None = None,
    max_tokens: int = 256,
    prompt: str = REPLY_PROMPT,
) -> ChatResult:
    """``r_t = LLM(C_t, M_N, P_r)`` at temperature 0."""
    messages = build_reply_messages(context, memory, speaker=speaker, evidence=evidence, prompt=prompt)
    res = llm.chat(messages, max_tokens=max_tokens, temperature=0.0, stop=None, purpose="rsum_reply")
    return ChatResult(text=clean_model_text(res.text), usage=res.usage, data=res.data)


def _chunks(
    llm: LLM,
    session: Sequence[Message | Mapping[str, Any]],
    memory: str,
    max_sentences: int,
    session_time: datetime | None,
    gen_tokens: int,
    prompts: Sequence[str],
    speakers: list[str],
) -> list[str]:
    """Split the session transcript so that each memory prompt (the longest of ``prompts``)
    fits the context window.

    The room for the transcript leaves space for a memory as long as one
    generation (it may grow up to that between chunks).
    """
    lines = [format_turn(t) for t in session]
    whole = "\n".join(lines)
    fixed = max(
        llm.count_tokens(build_memory_messages("", NO_MEMORY, max_sentences=max_sentences, session_time=session_time,
                                               speakers=speakers, prompt=p)[0]["content"])
        for p in prompts
    )
    memory_room = max(llm.count_tokens(memory), gen_tokens)  # the memory may grow to the cap between chunks
    room = llm.context_window - gen_tokens - _PROMPT_MARGIN - fixed - memory_room
    if llm.count_tokens(whole) <= room:
        return [whole]
    if room < 32:
        raise ValidationError(
            "max_sentences", max_sentences, f"the memory prompt leaves no room in a {llm.context_window}-token context"
        )
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        n = llm.count_tokens(line) + 1
        if n > room:  # one enormous turn: cut it to what fits
            line = line[: max(1, len(line) * room // n)]
            n = room
        if current and used + n > room:
            chunks.append("\n".join(current))
            current, used = [], 0
        current.append(line)
        used += n
    if current:
        chunks.append("\n".join(current))
    return chunks


def _check_max_sentences(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValidationError("max_sentences", n, "must be an integer >= 1")


def _check_decoding(decoding: int) -> None:
    if decoding not in MEMORY_DECODINGS:
        raise ValidationError("decoding", decoding, f"must be one of {MEMORY_DECODINGS} (see MEMORY_DECODING)")


def _append_cap(max_sentences: int) -> int:
    """Tokens one append step may generate: room for its new sentences and line breaks."""
    return _NEW_SENTENCE_TOKENS * min(APPEND_SENTENCES, max_sentences) + _CAP_MARGIN


def _full_allowance(max_sentences: int) -> int:
    """Tokens a memory of ``max_sentences`` full sentences may take: 32 per sentence + 64."""
    return _TOKENS_PER_SENTENCE * max_sentences + 64


# --------------------------------------------------------------------------- stateful


def first_gap(chain: Sequence[Checkpoint]) -> int:
    """Index of the first checkpoint after a gap in ``chain``'s sequence (``len(chain)`` if none).

    Forgetting a session deletes its checkpoint in the same transaction as its turns, and erases the
    texts of the later ones (:func:`erase_after_gap`): they were written from it too.  A gap is their
    rewrite (:meth:`RsumMemory.replay`) still owed (its job has not run yet, or failed), so nothing
    reads past it.
    """
    return _gap_index([c.seq for c in chain])


def _gap_index(seqs: Sequence[int]) -> int:
    """:func:`first_gap` over the chain's sequence numbers alone."""
    return next((i for i, seq in enumerate(seqs) if seq != (seqs[i - 1] + 1 if i else 1)), len(seqs))


ERASED = ""  # the text of a checkpoint past a gap: its session and place stay for the rewrite, its words go


def erase_after_gap(store: RsumStore, user_id: str) -> int:
    """Erase the texts of the checkpoints past the chain's first gap, keeping their places; return how
    many there are (the summaries owed a rewrite, erased now or by an earlier forget).

    A later summary was written from the forgotten session too and quotes it.  The gap keeps it from
    being read, but an export, a copy of the store or the file's bytes would hold those words until the
    rewrite ran: model calls, minutes to hours for a long history.  So :func:`chronomem.forgetting.forget`
    erases them in its own transaction (call it inside the store's transaction of ``user_id``).  The
    rewrite reads only their sessions and order: each memory is recomputed from its session's stored
    turns and the memory before it, the one before the gap first.  Deleting them first also drops the
    ``end_session`` job results that quote them (``Store.delete_checkpoints``).
    """
    seqs = [seq for seq, _ in _heads_of(store, user_id)]
    gap = _gap_index(seqs)
    if gap == len(seqs):
        return 0  # no gap: the chain's texts are not even read
    later = store.checkpoints(user_id)[gap:]
    if any(c.memory != ERASED for c in later):
        store.delete_checkpoints(user_id, later[0].seq)
        for c in later:
            store.put_checkpoint(replace(c, memory=ERASED))
    return len(later)


def _heads_of(store: RsumStore, user_id: str) -> list[tuple[int, str]]:
    """``(seq, session_id)`` of the chain, oldest first (``Store.checkpoint_heads``: no text read)."""
    read = getattr(store, "checkpoint_heads", None)
    if callable(read):
        return [(seq, sid) for seq, sid in read(user_id)]
    return [(c.seq, c.session_id) for c in store.checkpoints(user_id)]


def checkpoint_at(store: RsumStore, user_id: str, as_of: datetime | str | None = None) -> Checkpoint | None:
    """The checkpoint valid at ``as_of`` (see :meth:`RsumMemory.checkpoint`); reading needs no model.

    Checkpoints past a gap (:func:`first_gap`) are never read: they may quote a forgotten session.
    A store that reads the one checkpoint itself (``Store.checkpoint_at``, by this rule) is asked for it:
    reading the whole chain to keep one cost tens of milliseconds per summary for a user of many sessions.
    """
    check_id("user_id", user_id)
    when = parse_time(as_of, "as_of") if as_of is not None else None
    read_one = getattr(store, "checkpoint_at", None)
    if callable(read_one):
        found: Checkpoint | None = read_one(user_id, when)
        return found
    chain = store.checkpoints(user_id)
    chain = chain[:first_gap(chain)]
    if when is None:
        return chain[-1] if chain else None
    # each summary has read every session before it in the chain: the one valid at as_of is the last of the
    # run of checkpoints whose sessions all happened by then.  A session ended after a later one (an old
    # conversation imported late) is summarised with the later one's words, so past the first session after
    # as_of no summary is valid then, however early its own session was
    last = None
    for c in chain:
        if (c.session_time or c.created_at) > when:
            break
        last = c
    return last


class RsumMemory:
    """Rsum over a long-term store: one checkpoint ``M_i`` per ended session.

    Checkpoints form a chain per user in the order sessions were ended
    (``seq`` 1, 2, …; ``M_0`` is implicit).  Updating a session that already
    has a checkpoint (more turns arrived, or a retried ``end_session``)
    rewrites the chain from that session on.
    """

    def __init__(
        self,
        store: RsumStore,
        llm: LLM,
        *,
        max_sentences: int = DEFAULT_MAX_SENTENCES,
        max_tokens: int | None = None,
        memory_prompt: str = MEMORY_PROMPT,
        reply_prompt: str = REPLY_PROMPT,
        decoding: int = MEMORY_DECODING,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        _check_max_sentences(max_sentences)
        _check_decoding(decoding)
        load_prompt("chronomem.summarize", memory_prompt)  # fail early on a bad prompt name
        load_prompt("chronomem.summarize", reply_prompt)
        self.store = store
        self.llm = llm
        self.max_sentences = max_sentences
        self.max_tokens = max_tokens
        self.memory_prompt = memory_prompt
        self.reply_prompt = reply_prompt
        self.decoding = decoding
        self._clock = clock

    # -- write -------------------------------------------------------------

    def update(self, user_id: str, session_id: str) -> Checkpoint | None:
        """Fold session ``session_id`` into the user's memory; return its checkpoint.

        Returns ``None`` (and writes nothing) when the session has no stored
        messages.  Idempotent: calling it again for a checkpointed session
        recomputes that checkpoint and the ones after it from the stored turns.
        """
        check_id("user_id", user_id)
        check_id("session_id", session_id)
        for _ in range(MAX_CHAIN_RETRIES):
            # the chain without its texts, then the one memory a new session builds on: a session's end
            # used to read every memory of the chain twice (megabytes for a user of thousands of sessions)
            heads = self._heads(user_id)
            if any(sid == session_id for _, sid in heads):
                chain = self.store.checkpoints(user_id)
                k = next((i for i, c in enumerate(chain) if c.session_id == session_id), None)
                if k is None:
                    continue  # it left the chain meanwhile (a racing forget): look again
                k = min(k, first_gap(chain))  # past a gap the memory before it is erased: rewrite from the gap
                rebuilt = self._rebuild(user_id, chain, k, [c.session_id for c in chain[k:]])
                return next((c for c in rebuilt if c.session_id == session_id), None)
            turns = self.store.messages(user_id, session_id=session_id)
            if not turns:
                log.info("rsum: session %r of user %r has no messages; memory unchanged", session_id, user_id)
                return None
            if [seq for seq, _ in heads] != list(range(1, len(heads) + 1)):  # a gap (first_gap): a forget's
                self.replay(user_id)  # rewrite is owed: never build on a stale memory
                continue
            prev = checkpoint_at(self.store, user_id) if heads else None
            if prev is not None and (prev.seq, prev.session_id) != heads[-1]:
                continue  # the chain changed between the two reads
            cp = self._checkpoint(user_id, session_id, turns, prev)  # the model call, outside any lock
            if self._commit_append(user_id, heads, prev, cp):
                return cp
        raise ChronomemError(f"rsum: the memory chain of user {user_id!r} kept changing under concurrent "
                             f"end_session calls ({MAX_CHAIN_RETRIES} tries); call end_session again")

    def replay(
        self, user_id: str, *, from_session: str | None = None, from_seq: int | None = None
    ) -> list[Checkpoint]:
        """Rebuild the chain after turns or sessions were forgotten.

        Without arguments the chain is rebuilt from the first point where a
        session was forgotten: a checkpoint whose session has no messages any
        more, or a gap in the sequence (the store deletes a forgotten
        session's own checkpoint with it; the later memories were written
        from it too, and forget erased them: :func:`erase_after_gap`); ``from_session``
        or ``from_seq`` force a rebuild from that point (e.g. after single
        turns were deleted, or with a new model), or from the gap when that
        comes first (the memories past it are erased).  Sessions left without
        messages drop out of the chain.  Returns the new checkpoints (empty
        when nothing had to change).  The new memories are computed before the
        old checkpoints are replaced, so a failure mid-way leaves the old
        chain in place; the replacement itself runs in one store transaction
        when the store offers ``transaction(user_id)``.
        """
        check_id("user_id", user_id)
        chain = self.store.checkpoints(user_id)
        if not chain:
            return []
        if from_session is not None and from_seq is not None:
            raise ValidationError("from_seq", from_seq, "give from_session or from_seq, not both")
        gap = first_gap(chain)
        if from_session is not None:
            found = next((i for i, c in enumerate(chain) if c.session_id == from_session), None)
            if found is None:
                raise ValidationError("from_session", from_session, "this session has no checkpoint")
            k = min(found, gap)  # a forced point past a gap: the memory before it is erased
        elif from_seq is not None:
            found = next((i for i, c in enumerate(chain) if c.seq >= from_seq), None)
            if found is None:
                return []
            k = min(found, gap)
        else:
            k = next((i for i, c in enumerate(chain[:gap]) if not self.store.messages(user_id, session_id=c.session_id)),
                     gap)
            if k == len(chain):
                return []
        return self._rebuild(user_id, chain, k, [c.session_id for c in chain[k:]])

    # -- read --------------------------------------------------------------

    def checkpoint(self, user_id: str, as_of: datetime | str | None = None) -> Checkpoint | None:
        """The checkpoint valid at ``as_of`` (event time; default: the latest).

        A checkpoint becomes valid at its session's time (the last turn's
        timestamp; the creation time when unknown); at ``as_of`` the valid one
        is the last of the chain's first checkpoints that are all valid then
        (a summary also holds every session summarised before it: when sessions
        were ended out of time order, an early one's summary holds later news).
        """
        return checkpoint_at(self.store, user_id, as_of)

    def summary(self, user_id: str, as_of: datetime | str | None = None) -> str:
        """The memory text valid at ``as_of`` (default now); ``""`` before the first session."""
        cp = self.checkpoint(user_id, as_of)
        return cp.memory if cp else ""

    def reply(
        self,
        user_id: str,
        context: Sequence[Message | Mapping[str, Any]],
        *,
        speaker: str = "assistant",
        evidence: str | None = None,
        as_of: datetime | str | None = None,
        max_tokens: int = 256,
    ) -> ChatResult:
        """``r_t = LLM(C_t, M_N, P_r)`` with the user's memory at ``as_of``."""
        return generate_reply(
            self.llm,
            context,
            self.summary(user_id, as_of) or NO_MEMORY,
            speaker=speaker,
            evidence=evidence,
            max_tokens=max_tokens,
            prompt=self.reply_prompt,
        )

    # -- internals ---------------------------------------------------------

    def _checkpoint(
        self, user_id: str, session_id: str, turns: list[Message], prev: Checkpoint | None
    ) -> Checkpoint:
        session_time = max(t.timestamp for t in turns)
        upd = update_memory(
            self.llm,
            turns,
            prev.memory if prev else NO_MEMORY,
            max_sentences=self.max_sentences,
            session_time=session_time,
            max_tokens=self.max_tokens,
            prompt=self.memory_prompt,
            decoding=self.decoding,
        )
        return Checkpoint(
            user_id=user_id,
            session_id=session_id,
            seq=(prev.seq + 1) if prev else 1,
            memory=upd.memory,
            created_at=self._clock(),
            session_time=session_time,
        )

    def _rebuild(
        self, user_id: str, chain: list[Checkpoint], k: int, session_ids: list[str], tries: int = 0
    ) -> list[Checkpoint]:
        prev = chain[k - 1] if k > 0 else None
        new: list[Checkpoint] = []
        for sid in session_ids:
            turns = self.store.messages(user_id, session_id=sid)
            if not turns:
                log.info("rsum: session %r of user %r is gone; dropped from the memory chain", sid, user_id)
                continue
            cp = self._checkpoint(user_id, sid, turns, prev)
            new.append(cp)
            prev = cp
        if not self._commit(user_id, chain, k, new):
            # another writer changed the chain while the memories were computed: start over from it
            if tries + 1 >= MAX_CHAIN_RETRIES:
                raise ChronomemError(f"rsum: the memory chain of user {user_id!r} kept changing under "
                                     f"concurrent writers ({MAX_CHAIN_RETRIES} tries); try again")
            now = self.store.checkpoints(user_id)
            start = next((i for i, c in enumerate(now) if c.session_id in session_ids), len(now))
            if start == len(now):
                return []
            start = min(start, first_gap(now))  # a forget meanwhile left a gap before our sessions
            return self._rebuild(user_id, now, start, [c.session_id for c in now[start:]], tries + 1)
        return new

    def _heads(self, user_id: str) -> list[tuple[int, str]]:
        return _heads_of(self.store, user_id)

    def _commit_append(self, user_id: str, heads: list[tuple[int, str]], prev: Checkpoint | None,
                       cp: Checkpoint) -> bool:
        """Append ``cp`` in one transaction unless the chain is no longer ``heads`` ending in ``prev``.

        :meth:`_commit` for a new session, reading what ``cp`` depends on and no more: it was computed
        from ``prev``'s memory alone, so the same sessions in the same order with the same last memory is
        the chain it was computed for (a rewrite of an earlier memory rewrites every later one, the last
        too).  Returns False, writing nothing, otherwise or when ``cp``'s session lost its turns."""
        transaction = getattr(self.store, "transaction", None)
        with transaction(user_id) if callable(transaction) else nullcontext():
            if self._heads(user_id) != heads:
                return False
            last = checkpoint_at(self.store, user_id) if heads else None
            if _chain_key([last] if last else []) != _chain_key([prev] if prev else []):
                return False
            if not self.store.messages(user_id, session_id=cp.session_id):
                return False  # forgotten while its memory was written: the caller retries
            self.store.put_checkpoint(cp)
        return True

    def _commit(self, user_id: str, chain: list[Checkpoint], k: int, new: list[Checkpoint]) -> bool:
        """Replace ``chain[k:]`` by ``new`` in one transaction, unless the stored chain is no longer
        ``chain``: each memory is computed from the one before it, so a checkpoint another writer
        added meanwhile (a racing ``end_session``) would otherwise be overwritten or skipped.
        Returns False, writing nothing, when the chain changed or a new checkpoint's session lost
        its turns (forgotten meanwhile)."""
        transaction = getattr(self.store, "transaction", None)
        with transaction(user_id) if callable(transaction) else nullcontext():
            if _chain_key(self.store.checkpoints(user_id)) != _chain_key(chain):
                return False
            if any(not self.store.messages(user_id, session_id=cp.session_id) for cp in new):
                return False  # a session was forgotten while its memory was written: the caller retries
            if k < len(chain):
                self.store.delete_checkpoints(user_id, chain[k].seq)
            for cp in new:
                self.store.put_checkpoint(cp)
        return True


def _chain_key(chain: Sequence[Checkpoint]) -> list[tuple[int, str, str]]:
    return [(c.seq, c.session_id, c.memory) for c in chain]
