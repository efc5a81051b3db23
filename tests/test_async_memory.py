"""AsyncMemory: the same public methods as Memory (checked by introspection, so a method added to
Memory without its async twin fails here), run on one worker thread per instance."""

from __future__ import annotations

import asyncio
import io
import inspect
import threading
from datetime import timedelta

import pytest
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM

from chronomem import AsyncMemory, ChronomemError, Config, Memory, NotFoundError, ValidationError
from chronomem.timeutil import utcnow


# Memory methods without an async twin, and why
SYNC_ONLY = {
    "write_pipeline": "returns a synchronous WritePipeline (the tuning hook of the CLI and the bench harness), "
                      "whose calls would bypass AsyncMemory's worker thread",
    "for_tenant": "returns a Memory view of another tenant sharing this one's store and models; "
                  "AsyncMemory.wrap(mem.sync.for_tenant(t)) makes it asynchronous",
}


def _public_methods(cls: type) -> dict[str, object]:
    return {name: fn for name, fn in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def test_every_public_memory_method_has_an_async_twin_with_the_same_signature() -> None:
    sync_methods = _public_methods(Memory)
    async_methods = _public_methods(AsyncMemory)
    assert {"add", "add_facts", "facts", "history", "search", "answer", "end_session", "summary", "context",
            "forget", "export", "import_", "entities", "alias", "close", "end_idle_sessions"} <= set(sync_methods)
    for name in SYNC_ONLY:
        sync_methods.pop(name)
    missing = sorted(set(sync_methods) - set(async_methods))
    assert missing == [], f"AsyncMemory lacks {missing}"
    for name, fn in sync_methods.items():
        twin = async_methods[name]
        assert inspect.iscoroutinefunction(twin), f"AsyncMemory.{name} is not a coroutine function"
        want = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
        got = [(p.name, p.kind, p.default) for p in inspect.signature(twin).parameters.values()]
        assert got == want, f"AsyncMemory.{name}{inspect.signature(twin)} != Memory.{name}{inspect.signature(fn)}"
        hints = (inspect.signature(fn).return_annotation, inspect.signature(twin).return_annotation)
        assert hints[0] == hints[1] or name in ("close", "use_models"), \
            f"AsyncMemory.{name} returns {hints[1]}, not {hints[0]}"
    assert hasattr(AsyncMemory, "__aenter__") and hasattr(AsyncMemory, "__aexit__")
    # and it is built from the same arguments
    ctor = [(p.name, p.kind, p.default) for p in inspect.signature(Memory.__init__).parameters.values()]
    assert [(p.name, p.kind, p.default) for p in inspect.signature(AsyncMemory.__init__).parameters.values()] == ctor


def test_write_read_and_sessions(tmp_path) -> None:
    async def main() -> None:
        async with AsyncMemory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
            res = await mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"),
                                user_id="u1", session_id="s1")
            assert res.facts_added == 2
            assert await mem.use_models(llm=SessionLLM()) is mem and mem.sync.llm.calls == []
            assert {f.object for f in await mem.facts(user_id="u1")} == {"Berlin", "Acme"}
            assert [f.object for f in await mem.history(user_id="u1", relation="lives_in")] == ["Berlin"]
            hits = await mem.search("Where does Maya live?", user_id="u1")
            assert "Berlin" in hits.context
            end = await mem.end_session(user_id="u1", session_id="s1")
            assert end.checkpoint is not None and "Berlin" in await mem.summary(user_id="u1")
            ctx = await mem.context([{"role": "user", "content": "hi"}], user_id="u1", budget_tokens=200)
            assert ctx[0]["role"] == "system" and ctx[-1]["content"] == "hi"
            dump = await mem.export(user_id="u1")
            assert (await mem.import_(dump, user_id="u2"))["messages"] == 1
            written = io.BytesIO()
            await mem.export_to(written, user_id="u1")
            written.seek(0)
            assert (await mem.import_from(written, user_id="u3"))["facts"] == 2
            assert {f.object for f in await mem.facts(user_id="u3")} == {"Berlin", "Acme"}
            assert (await mem.alias("Berlin", "the capital", user_id="u2")).name == "Berlin"
            assert {e.name for e in await mem.entities(user_id="u2")} >= {"Maya", "Berlin"}
            gone = await mem.forget(user_id="u2", everything=True)
            assert gone.messages_deleted == 1 and await mem.facts(user_id="u2") == []
        with pytest.raises(ChronomemError, match="closed"):
            await mem.facts(user_id="u1")

    asyncio.run(main())


def test_errors_are_raised_by_the_awaited_call_and_nothing_is_written(tmp_path) -> None:
    async def main() -> None:
        async with AsyncMemory(tmp_path / "m.db", embedder=False) as mem:
            with pytest.raises(ValidationError, match="as_of"):
                await mem.facts(user_id="u1", as_of="not a date")
            with pytest.raises(NotFoundError):
                await mem.forget(user_id="u1", fact_id="nope")
            with pytest.raises(ValidationError):
                await mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"},
                                     {"subject": "", "relation": "x", "object": "y"}], user_id="u1")
            assert await mem.facts(user_id="u1") == []

    asyncio.run(main())


def test_concurrent_calls_on_one_instance_run_one_at_a_time_on_one_thread(tmp_path) -> None:
    async def main() -> None:
        async with AsyncMemory(tmp_path / "m.db", embedder=False) as mem:
            threads: set[int] = set()
            active = [0, 0]  # now, most at once
            real = mem.sync.add_facts

            def spy(*a, **kw):  # type: ignore[no-untyped-def]
                threads.add(threading.get_ident())
                active[0] += 1
                active[1] = max(active)
                try:
                    return real(*a, **kw)
                finally:
                    active[0] -= 1

            mem.sync.add_facts = spy  # type: ignore[method-assign]
            await asyncio.gather(*(mem.add_facts([{"subject": f"P{i}", "relation": "likes", "object": "tea"}],
                                                 user_id="u1") for i in range(20)))
            assert len(await mem.facts(user_id="u1")) == 20
            assert active[1] == 1 and len(threads) == 1 and threading.get_ident() not in threads

    asyncio.run(main())


def test_wrap_and_idle_sweep(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False, config=Config(session_idle=60)) as sync:
        mem = AsyncMemory.wrap(sync)

        async def main() -> None:
            await mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"),
                          user_id="u1", session_id="s1")
            assert (await mem.end_idle_sessions(now=utcnow() + timedelta(seconds=10))).ended == []
            sweep = await mem.end_idle_sessions(now=utcnow() + timedelta(seconds=120))
            assert sweep.ended == [("u1", "s1")]
            task = mem.start_idle_sweeper(interval=3600)  # configured: the background task runs
            assert task is not None and not task.done()
            await mem.close()
            assert task.cancelled()

        asyncio.run(main())
    with pytest.raises(TypeError):
        AsyncMemory.wrap("not a memory")  # type: ignore[arg-type]


def test_a_cancelled_close_neither_blocks_the_loop_nor_leaves_the_memory_open(tmp_path) -> None:
    class SlowLLM(SessionLLM):
        def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
            threading.Event().wait(0.6)  # a model call in progress when close() is asked
            return super().chat(messages, **kw)

    async def main() -> None:
        mem = Memory(tmp_path / "m.db", llm=SlowLLM(), embedder=False)
        closed = threading.Event()
        real_close = mem.close

        def close() -> None:
            real_close()
            closed.set()

        mem.close = close  # type: ignore[method-assign]
        amem = AsyncMemory.wrap(mem)
        adding = asyncio.ensure_future(amem.add(conv("I live in Berlin and work at Acme."), user_id="u1"))
        await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(amem.close(), 0.1)
        assert loop.time() - started < 0.4  # the loop was not held until the add finished
        with pytest.raises(ChronomemError, match="closed"):
            await amem.facts(user_id="u1")
        assert len((await adding).added) == 2  # the running call finished, then the close ran
        await asyncio.get_running_loop().run_in_executor(None, closed.wait, 5)
        assert closed.is_set()
        await amem.close()  # again: a no-op

    asyncio.run(main())


def test_every_public_method_says_what_it_does() -> None:
    """``help(AsyncMemory.answer)`` was empty for 28 of its coroutines."""
    import inspect

    undocumented = [n for n, m in vars(AsyncMemory).items() if callable(m) and not n.startswith("_")
                    and not inspect.getdoc(m)]
    assert undocumented == []
    assert "Memory.answer" in inspect.getdoc(AsyncMemory.answer) and "question" in inspect.getdoc(AsyncMemory.answer)
