"""The typed public surface: what ``chronomem`` exports and how models are injected."""

from __future__ import annotations

import asyncio
import inspect
import io
from dataclasses import replace
from pathlib import Path

import pytest
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM as ScriptedLLM

import chronomem
from chronomem import (AddResult, Answer, AsyncMemory, ForgetResult, Memory, ModelSet, SearchConfig, SearchResult,
                       SessionEnd)


def test_every_exported_name_exists() -> None:
    missing = [n for n in chronomem.__all__ if not hasattr(chronomem, n)]
    assert missing == []


def test_user_id_is_a_required_keyword_and_search_takes_no_catch_all() -> None:
    for name in ("add", "add_facts", "facts", "history", "search", "answer", "end_session", "forget", "export"):
        params = inspect.signature(getattr(Memory, name)).parameters
        assert params["user_id"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params["user_id"].default is inspect.Parameter.empty, name
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), name


def test_models_are_injected_through_the_constructor_and_use_models() -> None:
    first, better = ScriptedLLM(fail_on="Berlin"), ScriptedLLM()
    with Memory(":memory:", llm=first, embedder=False) as mem:
        assert mem.llm is first and not mem.embeddings_enabled
        r = mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        assert isinstance(r, AddResult) and not r.ok and first.calls
        assert mem.use_models(llm=better) is mem and mem.llm is better
        again = mem.extract_pending(user_id="u1")
        assert again.ok and again.facts_added == 2 and better.calls
        assert not mem.embeddings_enabled  # use_models(llm=...) keeps the embedder setting
        res = mem.search("Where does Maya live?", user_id="u1", config=SearchConfig(embeddings=False))
        assert isinstance(res, SearchResult) and {f.object for f in res.facts} >= {"Berlin"}
        assert isinstance(mem.answer("Where does Maya live?", user_id="u1", method="real"), Answer)
        assert isinstance(mem.end_session(user_id="u1", session_id="s1"), SessionEnd)
        assert isinstance(mem.forget(user_id="u1", session_id="s1"), ForgetResult)


def test_a_model_set_resolves_nothing_until_used() -> None:
    models = ModelSet(llm="no-such-provider:x", embedder=False)
    assert not models.embeddings_enabled  # constructing it loaded nothing
    with pytest.raises(chronomem.ChronomemError):
        _ = models.llm


@pytest.mark.parametrize("off", [False, "none"])
def test_a_memory_without_a_chat_model_stores_and_searches_and_says_why_it_cannot_extract(off: object) -> None:
    with Memory(":memory:", llm=off, embedder=False) as mem:  # type: ignore[arg-type]
        assert not mem.models.llm_enabled
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        res = mem.search("Where does Maya live?", user_id="u1",
                         config=SearchConfig(embeddings=False, evaluator=True, intent_llm=True, fused_turns=5,
                                             expand_query=True))
        assert {f.object for f in res.facts} == {"Porto"}  # the model steps were skipped, not fatal
        assert any("query expansion skipped: no model (ConfigError)" in n for n in res.trace.notes)
        with pytest.raises(chronomem.ConfigError, match="no chat model"):
            mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        assert [m.id for m in mem.store.messages("u1", pending_only=True)] == ["t0"]  # kept for a model later
        with pytest.raises(chronomem.ConfigError, match="llm=False or spec 'none'"):
            mem.answer("Where does Maya live?", user_id="u1")
        mem.use_models(llm=ScriptedLLM())
        assert mem.models.llm_enabled and mem.extract_pending(user_id="u1").facts_added == 2


def test_add_facts_takes_the_same_typed_record_the_extractor_produces() -> None:
    from datetime import datetime, timezone

    from chronomem import FactInput, Origin, ValidationError

    with Memory(":memory:", embedder=False) as mem:
        rep = mem.add_facts([FactInput("Maya", "lives in", "Porto",  # a relation spelling, canonicalised
                                       valid_from=datetime(2018, 1, 1, tzinfo=timezone.utc)),
                             {"subject": "Maya", "relation": "works_at", "object": "Acme"}], user_id="u1")
        (porto, acme) = rep.added
        assert (porto.relation, porto.origin, acme.origin) == ("lives_in", Origin.IMPORTED, Origin.IMPORTED)
        with pytest.raises(ValidationError) as e:
            mem.add_facts([FactInput("Maya", "lives_in", "Lyon"), FactInput("Maya", "lives_in", " ")],
                          user_id="u1")
        assert e.value.field == "facts[1].object"
        assert [f.object for f in mem.history(user_id="u1", relation="lives_in")] == ["Porto"]  # none written


def test_search_options_apply_on_top_of_each_methods_defaults() -> None:
    from chronomem import SearchOptions, ValidationError
    from chronomem.retrieve import ANSWER_CONFIG

    opts = SearchOptions(context_tokens=60, llm_assist=False)
    assert opts.apply(SearchConfig()).context_tokens == 60
    on_answer = opts.apply(ANSWER_CONFIG)  # the answer's tuned defaults stay, except what is set
    assert (on_answer.quote_sources, on_answer.search_turns) == (ANSWER_CONFIG.quote_sources, ANSWER_CONFIG.search_turns)
    assert not on_answer.evaluator and not on_answer.intent_llm and on_answer.context_tokens == 60
    assert SearchOptions().apply(ANSWER_CONFIG) is ANSWER_CONFIG
    # the fused path's turn count, and the unfused layout chosen by tuning its own knobs
    assert SearchOptions(turns=12).apply(ANSWER_CONFIG).fused_turns == 12
    classic = SearchOptions(quote_sources=3).apply(replace(ANSWER_CONFIG, fused_turns=20))
    assert (classic.fused_turns, classic.quote_sources) == (0, 3)
    assert SearchOptions(turns=5, search_turns=2).apply(ANSWER_CONFIG).fused_turns == 5
    with Memory(":memory:", embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": f"City{i}", "valid_from": f"20{10 + i}-01-01",
                        "valid_to": f"20{11 + i}-01-01"} for i in range(8)], user_id="u1")
        full = mem.search("How has where Maya lives changed?", user_id="u1")
        res = mem.search("How has where Maya lives changed?", user_id="u1", options=SearchOptions(context_tokens=90))
        assert 0 < res.context_tokens <= 90 < full.context_tokens
        with pytest.raises(ValidationError) as e:
            mem.search("Where?", user_id="u1", options={"context_tokens": 40})  # type: ignore[arg-type]
        assert e.value.field == "options"
        with pytest.raises(ValidationError) as e:
            mem.search("Where?", user_id="u1", options=SearchOptions(context_tokens=0))
        assert e.value.field == "config.context_tokens"


@pytest.mark.parametrize("tenant", ["", " ", "a/b"])
def test_a_tenant_name_that_names_no_tenant_is_refused_not_read_as_the_default(tenant: str) -> None:
    """``Memory(tenant="")`` and ``for_tenant("")`` opened the default tenant: an app passing an empty tenant
    from a request read the default tenant's users."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        with pytest.raises(chronomem.ValidationError, match="tenant"):
            mem.for_tenant(tenant)
        with pytest.raises(chronomem.ValidationError, match="tenant"):
            mem.for_tenant(None)  # type: ignore[arg-type]
        assert [f.object for f in mem.for_tenant("default").facts(user_id="u1")] == ["Porto"]
    with pytest.raises(chronomem.ValidationError, match="tenant"):
        Memory(":memory:", llm=False, embedder=False, tenant=tenant)
    assert Memory(":memory:", llm=False, embedder=False, tenant=None).tenant == "default"


def test_export_and_import_take_paths_and_refuse_text_streams(tmp_path: Path) -> None:
    """A text stream failed with Python's TypeError halfway; a path was an AttributeError."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        with pytest.raises(chronomem.ValidationError, match="binary file"):
            mem.export_to(io.StringIO(), user_id="u1")
        assert mem.export_to(tmp_path / "u1.json", user_id="u1")["facts"] == 1
        assert mem.export_to(str(tmp_path / "u1.json"), user_id="u1")["facts"] == 1  # replaced, not appended
        with pytest.raises(chronomem.ValidationError, match="binary file"):
            mem.import_from(io.StringIO((tmp_path / "u1.json").read_text()), user_id="u2")
        assert mem.import_from(tmp_path / "u1.json", user_id="u2")["facts"] == 1
        assert [f.object for f in mem.facts(user_id="u2")] == ["Porto"]


@pytest.mark.parametrize("timeout", ["abc", -1, float("nan"), True])
def test_async_wait_checks_its_timeout_as_the_sync_one_does(timeout: object) -> None:
    async def main() -> None:
        async with AsyncMemory(":memory:", llm=False, embedder=False) as mem:
            with pytest.raises(chronomem.ValidationError, match="timeout"):
                await mem.wait("job-1", timeout=timeout)  # type: ignore[arg-type]
    with Memory(":memory:", llm=False, embedder=False) as sync:
        with pytest.raises(chronomem.ValidationError, match="timeout"):
            sync.wait("job-1", timeout=timeout)  # type: ignore[arg-type]
    asyncio.run(main())


def test_deliver_takes_a_job_or_its_id() -> None:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        with pytest.raises(chronomem.NotFoundError, match="no job 'job-1'"):
            mem.deliver("job-1")
        with pytest.raises(chronomem.ValidationError, match="job_id"):
            mem.deliver(5)  # type: ignore[arg-type]


def test_a_tilde_path_is_the_file_in_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Memory("~/mem/x.db")`` made the folder in the home folder, then failed to open "~/mem/x.db"."""
    monkeypatch.setenv("HOME", str(tmp_path))
    with Memory("~/mem/x.db", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
    assert (tmp_path / "mem" / "x.db").is_file()
    with Memory(str(tmp_path / "mem" / "x.db"), llm=False, embedder=False) as mem:
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]
