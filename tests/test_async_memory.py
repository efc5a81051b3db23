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
from chronomem.jobs.model import JobStatus
from chronomem.jobs.service import JobTimeoutError
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


class _SlowLLM(SessionLLM):
    """A model call that is still running when the caller moves on (close() asked meanwhile)."""

    def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
        threading.Event().wait(0.6)
        return super().chat(messages, **kw)


def _watch_close(mem: Memory) -> threading.Event:
    """An event set once ``mem.close()`` has run (on whatever thread runs it)."""
    closed = threading.Event()
    real_close = mem.close

    def close() -> None:
        real_close()
        closed.set()

    mem.close = close  # type: ignore[method-assign]
    return closed


def test_a_cancelled_close_neither_blocks_the_loop_nor_leaves_the_memory_open(tmp_path) -> None:
    async def main() -> None:
        mem = Memory(tmp_path / "m.db", llm=_SlowLLM(), embedder=False)
        closed = _watch_close(mem)
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


def test_a_task_cancelled_inside_close_stays_cancelled_and_the_memory_still_closes(tmp_path) -> None:
    """close() awaited the idle sweeper it had cancelled and dropped every CancelledError it saw: a cancel
    aimed at its caller was swallowed, close() returned and the code after ``async with`` ran."""
    async def main() -> None:
        mem = Memory(tmp_path / "m.db", llm=_SlowLLM(), embedder=False, config=Config(session_idle=60))
        closed = _watch_close(mem)
        amem = AsyncMemory.wrap(mem)
        adding: list[asyncio.Future[object]] = []
        after: list[str] = []

        async def agent() -> None:
            async with amem:  # starts the idle sweeper (session_idle is set)
                adding.append(asyncio.ensure_future(amem.add(conv("I live in Berlin and work at Acme."),
                                                             user_id="u1")))
                await asyncio.sleep(0.05)  # the add's model call is running
            after.append("ran")

        task = asyncio.ensure_future(agent())
        await asyncio.sleep(0)
        sweeper = amem.start_idle_sweeper()
        assert sweeper is not None
        while not sweeper.cancelling():  # the agent is in close(), awaiting the sweeper it cancelled
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled() and after == []  # the cancel reached the agent
        assert sweeper.cancelled()
        with pytest.raises(ChronomemError, match="closed"):
            await amem.facts(user_id="u1")
        assert len((await adding[0]).added) == 2  # the call in flight finished, then the close ran
        assert await asyncio.get_running_loop().run_in_executor(None, closed.wait, 5)

    asyncio.run(main())


def test_a_closing_sweeper_cancelled_by_close_itself_does_not_cancel_the_caller(tmp_path) -> None:
    async def main() -> None:
        async with AsyncMemory(tmp_path / "m.db", embedder=False, config=Config(session_idle=60)) as amem:
            sweeper = amem.start_idle_sweeper()
        assert sweeper is not None and sweeper.cancelled()  # and this line ran: close() returned

    asyncio.run(main())


def test_wait_keeps_its_deadline_while_another_call_holds_the_worker(tmp_path) -> None:
    """wait() looked at the job through the worker thread: behind another coroutine's long call its
    timeout=0.3 became the length of that call, and a job that finished meanwhile went unseen."""
    gate = threading.Event()

    class GatedLLM(SessionLLM):
        def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
            if kw.get("purpose") == "extract":
                gate.wait(10)  # the job's model call, on the in-process queue's thread
            return super().chat(messages, **kw)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with AsyncMemory(tmp_path / "m.db", llm=GatedLLM(), embedder=False) as amem:
            job = await amem.submit_messages(conv("I live in Berlin and work at Acme."), user_id="u1",
                                             session_id="s1")
            busy = threading.Event()
            real_facts = amem.sync.facts

            def hold(**kw):  # type: ignore[no-untyped-def]
                busy.wait(10)  # another user's long call on the worker thread
                return real_facts(**kw)

            amem.sync.facts = hold  # type: ignore[method-assign]
            release = loop.call_later(8, busy.set)  # the old wait came back only then
            holding = asyncio.ensure_future(amem.facts(user_id="u2"))
            await asyncio.sleep(0.05)
            try:
                started = loop.time()
                with pytest.raises(JobTimeoutError) as err:
                    await amem.wait(job, timeout=0.3)
                assert 0.3 <= loop.time() - started < 4 and not busy.is_set()  # far from 8 s, on a busy host too
                assert err.value.job.id == job.id and not err.value.job.finished
                gate.set()  # the job finishes while the worker is still held
                done = await amem.wait(job.id, timeout=2)
                assert done.status is JobStatus.DONE and not busy.is_set()
                assert done.result is not None and len(done.result["added"]) == 2
                with pytest.raises(NotFoundError):
                    await amem.wait("no-such-job", timeout=1)
            finally:
                gate.set()
                release.cancel()
                busy.set()
                await holding

    asyncio.run(main())
