"""CI-sized smoke run of the memory-based benchmark methods (flat_facts, vanilla_graph, real, real+rsum,
ablations) over a tiny synthetic LoCoMo-shaped conversation, with a scripted test double for the LLM.

Checks the pipeline — rows, recall ids (dia_ids from facts' sources), shared and resumable
ingestion, refusals — not the scores.  No real model.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem.bench.datasets import load_locomo
from chronomem.bench.memory_methods import (MEMORY_DIR, IngestConfig, ingest_conversation, memory_path,
                                            question_time)
from chronomem.bench.methods import (METHODS, MethodConfig, MethodInfo, MethodUnavailableError, SharedIngest,
                                     make_method, unavailable_reason)
from chronomem.bench.runner import INGEST_FILE, RESULTS_FILE, read_jsonl, run_locomo
from chronomem.providers.base import CallUsage, ChatResult

LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")

# What the scripted "model" extracts from a turn text: (subject, relation, object, time)
SCRIPT: dict[str, list[tuple[str, str, str, str]]] = {
    "I live in Berlin and I work at Acme.": [("I", "lives_in", "Berlin", ""), ("I", "works_at", "Acme", "")],
    "My dog Pixel loves the park.": [("I", "has_pet", "Pixel", "")],
    "I moved to Munich last week.": [("I", "lives_in", "Munich", "last week")],
    "I started painting landscapes.": [("I", "likes", "painting", "")],
}

SESSION_1 = [
    ("D1:1", "Maya", "I live in Berlin and I work at Acme."),
    ("D1:2", "Tom", "Nice, how is it going?"),
    ("D1:3", "Maya", "My dog Pixel loves the park."),
]
SESSION_2 = [
    ("D2:1", "Maya", "I moved to Munich last week."),
    ("D2:2", "Tom", "Wow, big change!"),
    ("D2:3", "Maya", "I started painting landscapes."),
]


def locomo_file(tmp_path: Path) -> Path:
    """A LoCoMo-shaped JSON file: two dated sessions, an image caption, four questions."""
    def turns(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        return [{"speaker": s, "dia_id": d, "text": t} for d, s, t in items]

    s1 = turns(SESSION_1)
    s1[2]["blip_caption"] = "a photo of a dog in a park"
    rec = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Maya", "speaker_b": "Tom",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": s1,
            "session_2_date_time": "10:00 am on 20 June, 2023", "session_2": turns(SESSION_2),
        },
        "qa": [
            {"question": "Where does Maya live?", "answer": "Munich", "evidence": ["D2:1"], "category": 4},
            {"question": "Where does Maya work?", "answer": "Acme", "evidence": ["D1:1"], "category": 4},
            {"question": "What is the name of Maya's dog?", "answer": "Pixel", "evidence": ["D1:3"], "category": 1},
            {"question": "When did Maya move to Munich?", "answer": "June 2023", "evidence": ["D2:1"],
             "category": 2},
        ],
    }
    path = tmp_path / "locomo_test.json"
    path.write_text(json.dumps([rec]))
    return path


class ScriptedLLM:
    """A test double for the LLM protocol, per call purpose.

    extract: facts from SCRIPT for the turns under "Turns:"; intents/evaluate:
    fixed valid JSON; rsum: a reported sentence; answer: the first memory line
    (so the row shows the context reached the prompt).  ``interrupt_on_extract``
    raises KeyboardInterrupt on that extraction call (1-based), as a killed run would.
    """

    name = "scripted-memory"
    context_window = 8192

    def __init__(self, interrupt_on_extract: int | None = None) -> None:
        self.purposes: list[str] = []
        self.prompts: list[list[dict[str, str]]] = []
        self.interrupt_on_extract = interrupt_on_extract

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        user = messages[-1]["content"]
        usage = CallUsage(prompt_tokens=self.count_tokens(user), completion_tokens=5, latency_s=0.001,
                          purpose=purpose)
        if purpose == "extract":
            if self.interrupt_on_extract is not None and self.purposes.count("extract") + 1 == self.interrupt_on_extract:
                raise KeyboardInterrupt
            self.purposes.append(purpose)
            self.prompts.append(messages)
            facts = []
            in_turns = False
            for line in user.splitlines():
                if line == "Turns:":
                    in_turns = True
                    continue
                m = LINE.match(line)
                if m and in_turns:
                    said = m.group(3).split(" [shares an image:")[0]  # the caption is part of the turn
                    for subj, rel, obj, when in SCRIPT.get(said, []):
                        facts.append({"subject": subj, "relation": rel, "object": obj, "time": when,
                                      "ended": False, "certainty": "certain", "intent": "FACT"})
            return ChatResult(text="{}", usage=usage, data={"facts": facts})
        self.purposes.append(purpose)
        self.prompts.append(messages)
        if purpose == "intents":
            return ChatResult(text="{}", usage=usage, data={"intents": ["FACT"]})
        if purpose == "evaluate":
            return ChatResult(text="{}", usage=usage, data={"score": 0.5, "sufficient": False})
        if purpose == "rsum":
            return ChatResult(text="Maya moved from Berlin to Munich and has a dog called Pixel.", usage=usage)
        memory = user.split("Memory:", 1)[-1].splitlines()
        first = next((ln.strip() for ln in memory[1:] if ln.strip().startswith(("- ", "F1", "P1"))), "none")
        return ChatResult(text=first, usage=usage)


class HashEmbedder:
    name = "test-hash"
    dim = 64

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in re.findall(r"\w+", t.lower()):
                v[sum(map(ord, w)) % self.dim] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


@pytest.fixture()
def conv(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_locomo(locomo_file(tmp_path))


DIA_IDS = {d for d, _, _ in SESSION_1 + SESSION_2}


def test_memory_methods_are_registered_and_available() -> None:
    for name in ("flat_facts", "vanilla_graph", "real", "real+rsum", "real+sources", "real+turns", "real+fts",
                 "real+floor", "real+replies", "real-no-intervals", "real-no-confidence", "real-no-intents",
                 "real-no-evaluator", "real-no-counterfactuals"):
        assert unavailable_reason(name) is None, name
    with pytest.raises(MethodUnavailableError, match="embedder"):
        make_method("real", ScriptedLLM(), MethodConfig(), None)


def test_real_and_flat_facts_smoke_run_and_resume(tmp_path: Path, conv) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    llm = ScriptedLLM()
    cfg = MethodConfig(top_k=5)
    summary = run_locomo(conv, ["real", "flat_facts"], llm, out, embedder=HashEmbedder(), config=cfg,
                         categories=(1, 2, 4), command="pytest")
    assert summary.planned == 8 and summary.answered == 8 and summary.failed == 0
    # one extraction call per session chunk (2 sessions of 3 turns), made once for both methods
    assert llm.purposes.count("extract") == 2
    rows = read_jsonl(out / RESULTS_FILE)
    assert len(rows) == 8 and {r["method"] for r in rows} == {"real", "flat_facts"}
    for r in rows:
        assert set(r["retrieved_ids"]) <= DIA_IDS  # facts' sources are LoCoMo dia_ids
        assert r["scores"]["recall_at_k"] is not None  # ranked: recall@k applies
        assert r["usage"]["calls"] >= 1 and r["retrieval_latency_s"] >= 0.0
    # the stated facts were found and their source turns reached the rows
    by = {(r["method"], r["question"]): r for r in rows}
    for method in ("real", "flat_facts"):
        assert "D1:1" in by[(method, "Where does Maya work?")]["retrieved_ids"]
        assert "D1:3" in by[(method, "What is the name of Maya's dog?")]["retrieved_ids"]
        assert any(r["scores"]["recall_at_k"] == 1.0 for r in rows if r["method"] == method)
        assert all(r["context_tokens"] > 0 for r in rows if r["method"] == method and r["retrieved_ids"])
    # the scripted answer is the first memory line: each method's own evidence reached the shared prompt
    assert by[("real", "Where does Maya work?")]["prediction"].startswith("P1 Maya")
    assert by[("flat_facts", "Where does Maya work?")]["prediction"].startswith("- Maya")
    # the answer prompt is the shared one of every method (prompts/answer_v1.txt)
    answer_systems = {p[0]["content"] for p, purpose in zip(llm.prompts, llm.purposes) if purpose == "answer"}
    assert len(answer_systems) == 1 and "conversation between two people" in next(iter(answer_systems))

    ingest = read_jsonl(out / INGEST_FILE)
    assert [r["method"] for r in ingest] == ["real", "flat_facts"]
    assert ingest[0]["usage"]["calls"] == 2 and ingest[0]["built"]  # built by the first method …
    assert ingest[1]["usage"]["calls"] == 0 and ingest[1]["built"] == []  # … reused by the second
    files = list((out / MEMORY_DIR).glob("*.sqlite"))
    assert len(files) == 1 and files[0].name.startswith("conv-test-")
    assert ingest[0]["info"]["sessions_added"] == 2 and ingest[0]["info"]["embedded_facts"] >= 4

    # resume: every question done -> no model call at all
    n = len(llm.purposes)
    again = run_locomo(conv, ["real", "flat_facts"], llm, out, embedder=HashEmbedder(), config=cfg,
                       categories=(1, 2, 4))
    assert again.answered == 0 and again.skipped_done == 8 and len(llm.purposes) == n

    # a new method in a new process (fresh LLM): ingestion is skipped (journal), no extraction call
    llm2 = ScriptedLLM()
    more = run_locomo(conv, ["vanilla_graph"], llm2, out, embedder=HashEmbedder(), config=cfg, categories=(1, 2, 4))
    assert more.answered == 4 and "extract" not in llm2.purposes
    last = read_jsonl(out / INGEST_FILE)[-1]
    assert last["info"]["sessions_skipped"] == 2 and last["info"]["sessions_added"] == 0
    assert last["usage"]["calls"] == 0


def test_interrupted_ingestion_continues(tmp_path: Path, conv) -> None:  # type: ignore[no-untyped-def]
    c = conv[0]
    with pytest.raises(KeyboardInterrupt):  # killed during the second session's extraction
        ingest_conversation(c, ScriptedLLM(interrupt_on_extract=2), HashEmbedder(), tmp_path)
    path = memory_path(tmp_path, c, IngestConfig.for_llm(ScriptedLLM()))
    journal = json.loads(path.with_name(path.name + ".ingest.json").read_text())
    assert list(journal["sessions"]) == ["conv-test:S1"]

    llm = ScriptedLLM()
    ing = ingest_conversation(c, llm, HashEmbedder(), tmp_path)
    assert llm.purposes == ["extract"]  # only the unfinished session
    assert (ing.sessions_skipped, ing.sessions_resumed, ing.sessions_added) == (1, 1, 0)
    assert ing.usage.calls == 1
    objects = {f.object for f in ing.mem.history(user_id="conv-test")}
    assert {"Berlin", "Acme", "Pixel", "Munich"} <= objects
    stored = ing.mem.store.messages("conv-test")
    assert {m.id for m in stored} == DIA_IDS and all(m.extracted for m in stored)
    dog = next(m for m in stored if m.id == "D1:3")
    assert "[shares an image: a photo of a dog in a park]" in dog.text
    assert dog.timestamp.year == 2023 and dog.timestamp.month == 5
    assert question_time(c) is not None and question_time(c).month == 6  # type: ignore[union-attr]
    ing.mem.close()


def test_contexts_of_each_method(conv) -> None:  # type: ignore[no-untyped-def]
    """One shared in-RAM ingestion; each method's context has the form it claims."""
    c = conv[0]
    llm = ScriptedLLM()
    shared = SharedIngest(c)
    cfg = MethodConfig(top_k=5)
    ctx = {}
    for name in ("real", "vanilla_graph", "flat_facts", "real+rsum", "real+sources", "real+turns", "real+fts",
                 "real+floor", "real+replies", "real+fused", "answer", "real-no-intervals", "real-no-evaluator"):
        m = make_method(name, llm, cfg, HashEmbedder())
        m.ingest(c, shared)
        ctx[name] = m.retrieve("Where does Maya work?")
        assert "D1:1" in ctx[name].ids, name
    assert llm.purposes.count("extract") == 2 and llm.purposes.count("rsum") == 2  # built once each
    assert ctx["real"].context.startswith("Evidence (as of 20 June 2023")  # as of the last session
    assert "c=" in ctx["real"].context
    vanilla = ctx["vanilla_graph"].context
    assert vanilla.startswith("Facts:") and "c=" not in vanilla and "->" not in vanilla and "2023" not in vanilla
    assert ctx["flat_facts"].context.startswith("Memories:") and "c=" not in ctx["flat_facts"].context
    assert ctx["real+rsum"].context.startswith("Summary of all sessions:\nMaya moved")
    assert "Relevant facts:\nEvidence" in ctx["real+rsum"].context
    # real+sources: REAL's evidence, then the verbatim turns its facts cite, dated and attributed
    evidence, quotes = ctx["real+sources"].context.split("\nSource turns:\n")
    assert evidence == ctx["real"].context
    assert quotes.splitlines()[0] == "[8 May 2023 13:56] D1:1 Maya: I live in Berlin and I work at Acme."
    # real+turns: the same, then other turns full-text search finds; their ids count for recall too
    turns = ctx["real+turns"]
    assert turns.context.startswith(ctx["real+sources"].context + "\nOther turns that match the question:\n")
    assert turns.ids[: len(ctx["real+sources"].ids)] == ctx["real+sources"].ids
    assert len(turns.ids) > len(ctx["real+sources"].ids)
    # real+fts: REAL's evidence, then full-text hits only (no "Source turns:" block); the facts' own
    # turns come first in its ids, as the evidence cites them, then the hits
    fts = ctx["real+fts"]
    assert fts.context.startswith(ctx["real"].context + "\nOther turns that match the question:\n")
    assert "Source turns:" not in fts.context
    assert fts.ids[0] == "D1:1" and len(fts.ids) > len(ctx["real"].ids)
    # real+floor: real+turns' context while a path clears the floor of 0.5, else full-text hits alone
    floor = ctx["real+floor"].context
    assert floor == turns.context or (floor.startswith("Other turns that match the question:")
                                      and "Evidence" not in floor)
    # real+replies: real+turns' evidence and source turns; its other turns are hits each followed by
    # its reply (here D2:1's reply D2:2), within real+turns' 5 other turns.  real+turns finds D2:2 as well,
    # through the turn before it (the turn index pairs each turn with its predecessor)
    replies = ctx["real+replies"]
    assert replies.context.startswith(ctx["real+sources"].context + "\nOther turns that match the question:\n")
    assert set(turns.ids) <= set(replies.ids) and len(replies.ids) - len(ctx["real+sources"].ids) <= 5
    assert replies.ids.index("D2:2") == replies.ids.index("D2:1") + 1
    # real+fused: REAL's evidence and the fused turns; its ids are the fused turns in rank order first
    fused = ctx["real+fused"]
    quoted = fused.info["quoted_ids"]
    assert quoted and fused.ids[: len(quoted)] == quoted and set(fused.ids) >= set(ctx["real"].ids)
    assert "Evidence" in fused.context and all(f" {i} " in fused.context for i in quoted)
    # the evaluator-off ablation never asks the model to evaluate
    n_eval = llm.purposes.count("evaluate")
    m = make_method("real-no-evaluator", llm, cfg, HashEmbedder())
    m.ingest(c, shared)
    m.retrieve("What does Maya like to do?")
    assert llm.purposes.count("evaluate") == n_eval
    # a question the memory cannot touch: "Not mentioned" without an answer call
    real = make_method("real", llm, cfg, HashEmbedder())
    real.ingest(c, shared)
    from chronomem.bench.datasets import QA

    n_answer = llm.purposes.count("answer")
    ans = real.answer(QA(qid="x", question="Zzyzx qwerty?", answer="", category=4, evidence=()))
    assert ans.text == "Not mentioned" and ans.context == "" and ans.retrieved_ids == []
    assert llm.purposes.count("answer") == n_answer
    # the search's own model call (intent fallback) is counted in the question's usage
    assert ans.usage.calls == ans.info["search_llm_calls"] == 1


def test_refused_with_a_clear_error_when_an_api_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(chronomem.Memory, "extract_pending")
    with pytest.raises(MethodUnavailableError, match=r"real is not available: .*Memory\.extract_pending"):
        make_method("real", ScriptedLLM(), MethodConfig(), HashEmbedder())
    monkeypatch.undo()
    info = METHODS["real-no-intents"]
    monkeypatch.setitem(METHODS, "real-no-intents", MethodInfo(
        info.name, info.description, info.factory, needs_embedder=True,
        needs_memory_api=info.needs_memory_api, needs_options=("use_intent_magic",)))
    reason = unavailable_reason("real-no-intents")
    assert reason is not None and "SearchConfig.use_intent_magic" in reason


def test_ingest_key_follows_the_postprocess_version_and_keeps_older_keys() -> None:
    import hashlib
    import json
    from dataclasses import asdict, replace

    from chronomem.bench.memory_methods import INGEST_VERSION, IngestConfig

    old = IngestConfig(llm="local:m", extract_prompt="extract_v3", chunk_size=8, chunk_context=2,
                       theta_stable=0.6, postprocess=1)
    legacy = {k: v for k, v in asdict(old).items() if k not in ("postprocess", "extraction")}
    assert legacy["version"] == INGEST_VERSION
    assert old.key() == hashlib.sha1(json.dumps(legacy, sort_keys=True).encode()).hexdigest()[:10]
    assert replace(old, postprocess=2).key() != old.key()  # a memory built by other post-processing
    v1 = IngestConfig.for_llm(ScriptedLLM())
    with_pp = {k: v for k, v in asdict(v1).items() if k != "extraction"}  # v1 keys as saved before v2/v3
    assert v1.key() == hashlib.sha1(json.dumps(with_pp, sort_keys=True).encode()).hexdigest()[:10]
    v3 = IngestConfig.for_llm(ScriptedLLM(), "v3")
    assert (v3.extraction, v3.extract_prompt) == ("v3", "observe_lines_v1")
    assert len({v1.key(), IngestConfig.for_llm(ScriptedLLM(), "v2").key(), v3.key()}) == 3


def test_an_unknown_extraction_method_is_refused_by_name() -> None:
    from chronomem.bench.memory_methods import IngestConfig
    from chronomem.errors import ValidationError

    with pytest.raises(ValidationError, match="extraction"):
        IngestConfig.for_llm(ScriptedLLM(), "v99")
    from chronomem.extract.pipeline import method_versions

    with pytest.raises(ValidationError, match="method.*v1, v2, v3"):
        method_versions("v99")


def test_search_changes_reach_the_real_methods_and_their_result_keys() -> None:
    from chronomem.bench.methods import parse_search_changes
    from chronomem.bench.runner import config_key
    from chronomem.errors import ValidationError

    changes = parse_search_changes(["fused_weights=0,1,0", "context_tokens=950", "evaluator=false"])
    assert changes == (("context_tokens", 950), ("evaluator", False), ("fused_weights", (0.0, 1.0, 0.0)))
    llm = ScriptedLLM()
    plain = make_method("real+fused", llm, MethodConfig(), HashEmbedder())
    tuned = make_method("real+fused", llm, MethodConfig(search=changes), HashEmbedder())
    cfg = tuned.search_config()  # type: ignore[attr-defined]
    assert (cfg.fused_turns, cfg.fused_weights, cfg.context_tokens, cfg.evaluator) == (20, (0.0, 1.0, 0.0), 950, False)
    assert plain.describe()["search"] == {"fused_turns": 20}  # no changes: the key rows were saved under
    assert tuned.describe()["search"]["fused_weights"] == (0.0, 1.0, 0.0)
    assert config_key(plain, llm, "p") != config_key(tuned, llm, "p")
    bm25 = make_method("bm25", llm, MethodConfig(search=changes), HashEmbedder())
    assert "search" not in bm25.describe()
    for bad, word in (("fused_weights", "FIELD=VALUE"), ("no_such=1", "unknown"), ("context_tokens=many", "number"),
                      ("fused_weights=0,1", "fused_weights")):
        with pytest.raises(ValidationError, match=word):
            parse_search_changes([bad])


def test_answer_method_runs_memory_answers_config_and_real_keeps_its_fixed_base() -> None:
    from dataclasses import replace

    from chronomem.bench.memory_methods import real_base_config
    from chronomem.retrieve import ANSWER_CONFIG, SearchConfig

    llm = ScriptedLLM()
    answer = make_method("answer", llm, MethodConfig(), HashEmbedder())
    assert answer.search_config() == ANSWER_CONFIG  # type: ignore[attr-defined]
    fields = answer.describe()["answer_config"]
    assert fields and all(getattr(ANSWER_CONFIG, k) == v != getattr(SearchConfig(), k) for k, v in fields.items())
    real = make_method("real", llm, MethodConfig(), HashEmbedder())
    # the published method's base, whatever Memory.answer adds: no turns, 1200 tokens, model-assisted steps on
    assert real.search_config() == real_base_config() == SearchConfig(  # type: ignore[attr-defined]
        evaluator=True, intent_llm=True, max_llm_calls=3, max_llm_tokens=2000)
    assert make_method("real+turns", llm, MethodConfig(), HashEmbedder()).search_config() == replace(  # type: ignore[attr-defined]
        real_base_config(), quote_sources=8, search_turns=5)
