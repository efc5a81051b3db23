"""REST v1 routes.  Every route gets a Memory bound to the caller's tenant (see :mod:`.auth`):
user ids in paths are the tenant's own, and the store keeps tenants apart."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated, Any
from urllib.parse import unquote

import anyio
from fastapi import APIRouter, BackgroundTasks, Depends, HTTPException, Path, Query, Request, Response, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BeforeValidator
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from ..errors import NotFoundError
from ..forgetting import session_held
from ..limits import MAX_ID_CHARS, MAX_NAME_CHARS
from ..validation import check_id
from ..jobs.model import Job, JobPosition
from ..memory import Memory
from ..model import Entity, EntityPosition, Fact, FactPosition, MessagePosition, SessionPosition
from . import pagination
from .pagination import read_page
from .schemas import (AddIn, AliasIn, IsoTime, AnswerOut, AskIn, ContextIn, ContextOut, CorrectionOut, EndSessionIn,
                      EntityOut, ErrorOut, FactOut, FactPatch, FactsIn, ForgetOut, JobOut, MergeIn, MergeOut, Page, QueryIn,
                      SearchOut, SessionOut, StoredMessageOut, SummaryOut, UpdateOut, UserOut)

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "a body that is not JSON, or a request chronomem cannot apply"},
    401: {"model": ErrorOut, "description": "missing, unknown or revoked API key"},
    404: {"model": ErrorOut, "description": "no such user object in this tenant"},
    413: {"model": ErrorOut, "description": "request body too large"},
    422: {"model": ErrorOut, "description": "invalid input; `field` names it"},
    503: {"model": ErrorOut, "description": "the model or the store is unavailable"},
}

def _valid_id(value: str | None) -> str | None:
    """An id in a path or query as the library takes it (no NUL, no lone surrogate, not blank): a 422
    naming the parameter, rather than the database refusing it."""
    return None if value is None else check_id("id", value)


def _unquoted(value: Any) -> Any:
    """A path parameter as :class:`.app.EncodedSlashes` routes it (``%2F`` and ``%25`` still encoded),
    decoded.  Every path parameter of REST v1 is typed with :data:`FromPath`.  Bytes that are not UTF-8
    are a 422 naming the parameter: replaced by U+FFFD, ``%FF`` and ``%FE`` would address one id that
    neither of them is (ids are text; :mod:`chronomem.limits`)."""
    if not isinstance(value, str):
        return value
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 once percent-decoded: an id is text, sent as percent-encoded "
                         "UTF-8") from None


ValidId = AfterValidator(_valid_id)
FromPath = BeforeValidator(_unquoted)
_SLASH = '; an id holding "/" is sent percent-encoded, as %2F'
UserId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS,
                             description=f"the user, inside your tenant{_SLASH}"), FromPath, ValidId]
SessionId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS, description=f"the session{_SLASH}"),
                      FromPath, ValidId]
FactId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS), FromPath, ValidId]
JobId = FactId  # the same id rules
SessionQ = Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS, description="only this session's"), ValidId]
Limit = Annotated[int, Query(ge=1, le=pagination.MAX_LIMIT, description="items per page")]
Cursor = Annotated[str | None, Query(max_length=2048, description="next_cursor of the previous page")]
WaitQ = Annotated[bool, Query(description="block until the job finished (or `timeout` passed)")]
TimeoutQ = Annotated[float, Query(gt=0, le=3600, description="seconds to wait with wait=true")]
WAIT_POLL_S = 0.05  # the first pause of wait=true between reads of the job; it grows to 1 s (as Memory.wait's)


BEARER = HTTPBearer(auto_error=False, scheme_name="ApiKey", bearerFormat="cmk_…",
                    description="An API key (`chronomem keys create --tenant T`), sent as `Authorization: Bearer "
                                "<key>`; it names your tenant.  A service without any key (loopback only) "
                                "takes requests without one.")


def tenant_memory(request: Request,
                  _: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None) -> Memory:
    """The Memory of the caller's tenant.  ``BEARER`` declares the scheme in the OpenAPI document (what
    /docs "Authorize" and generated clients send); the header itself is read here, as it always was, so
    a missing, malformed or unknown key is the same 401 (:class:`.auth.Unauthorized`) and a service
    without keys takes requests without one."""
    tenancy = request.app.state.tenancy
    return tenancy.memory(tenancy.tenant_for(request.headers.get("authorization")))


Mem = Annotated[Memory, Depends(tenant_memory)]
router = APIRouter(prefix="/v1", responses=ERRORS)


def fact_out(f: Fact) -> dict[str, Any]:
    return f.to_dict()


def job_out(job: Job) -> dict[str, Any]:
    return job.to_dict()


def _fact_page(found: Sequence[Fact], limit: int) -> dict[str, Any]:
    return read_page(found, limit, fact_out, lambda f: pagination.FACTS.cursor(FactPosition.of(f)))


async def _job_reply(mem: Memory, job: Job, wait: bool, timeout: float, response: Response,
                     background: BackgroundTasks) -> dict[str, Any]:
    """The job is committed (durable) before the reply; it is handed to the queue after the reply
    is sent (or now, to wait for it).  A send lost to a crash is redone by a worker's sweep."""
    if not wait:
        background.add_task(mem.deliver, job)
        response.status_code = 200 if job.finished else 202
        return job_out(job)
    await run_in_threadpool(mem.deliver, job)
    job = await _finished(mem, job, timeout)
    response.status_code = 200 if job.finished else 202
    return job_out(job)


async def _finished(mem: Memory, job: Job, timeout: float) -> Job:
    """The job once done or failed, or as it stands after ``timeout`` seconds.

    Polled as :meth:`Memory.wait` polls, but each read is a short call in the threadpool and the wait
    between reads is on the event loop: a client waiting here holds no worker thread.  Blocking in
    ``mem.wait`` held one for as long as the job ran (minutes on a slow model), and AnyIO's pool has
    40: 40 waiting clients stopped every sync route, ``/health`` and other tenants' included."""
    deadline = anyio.current_time() + timeout
    delay = WAIT_POLL_S
    while not job.finished:
        left = deadline - anyio.current_time()
        if left <= 0:
            break
        await anyio.sleep(min(delay, left))
        delay = min(delay * 1.5, 1.0)
        job = await run_in_threadpool(mem.job, job.id)
    return job


# -- ingestion and jobs --------------------------------------------------------------------------------
@router.post("/users/{user_id}/messages", response_model=JobOut, status_code=202, tags=["ingestion"],
             responses={200: {"model": JobOut, "description": "finished (wait=true)"}})
async def post_messages(user_id: UserId, body: AddIn, mem: Mem, response: Response, background: BackgroundTasks,
                        wait: WaitQ = False,
                        timeout: TimeoutQ = 300.0) -> dict[str, Any]:
    """Store turns now and queue their extraction: 202 with the job (poll ``GET /v1/jobs/{id}``).

    Re-sent message ids are not stored twice; ``wait=true`` waits until the facts are extracted (200 with
    the finished job), or until ``timeout`` passes (202 with the job still queued or running).
    """
    msgs = [m.model_dump(exclude_none=True) for m in body.messages]
    job = await run_in_threadpool(mem.submit_messages, msgs, user_id=user_id, session_id=body.session_id,
                                  timestamp=body.timestamp, agent_id=body.agent_id, deliver=False)
    return await _job_reply(mem, job, wait, timeout, response, background)


@router.post("/users/{user_id}/sessions/{session_id:path}/end", response_model=JobOut, status_code=202,
             tags=["ingestion"], responses={200: {"model": JobOut, "description": "finished (wait=true)"}})
async def end_session(user_id: UserId, session_id: SessionId, mem: Mem,
                      response: Response, background: BackgroundTasks, body: EndSessionIn | None = None,
                      wait: WaitQ = False,
                      timeout: TimeoutQ = 300.0) -> dict[str, Any]:
    """Queue the end of a session: flush buffered turns, extract what is left, update the summary.

    404 when the user has no such session (no stored or buffered turn, no session row, no fact of it):
    ending one would only queue a job with nothing to do.  Ending a session again is allowed (it
    extracts and summarises what arrived since), so a retried request after a success is another 202."""
    ended_at = body.ended_at if body else None

    def submit() -> Job:
        if not _session_exists(mem, user_id, session_id):
            raise NotFoundError(f"user {user_id!r} has no session {session_id!r}")
        return mem.submit_end_session(user_id=user_id, session_id=session_id, ended_at=ended_at, deliver=False)

    job = await run_in_threadpool(submit)
    return await _job_reply(mem, job, wait, timeout, response, background)


def _session_exists(mem: Memory, user_id: str, session_id: str) -> bool:
    """Whether the user holds the session as :meth:`Memory.forget` finds one (:func:`.forgetting.session_held`),
    turns waiting in the session buffer included."""
    buffer = mem._buffer  # noqa: SLF001 - Memory has no public read of the buffer's sessions
    return session_held(mem.store, user_id, session_id,
                        buffered=buffer is not None and session_id in buffer.active_sessions(user_id))


@router.get("/jobs/{job_id}", response_model=JobOut, tags=["ingestion"])
def get_job(job_id: JobId, mem: Mem) -> dict[str, Any]:
    """A job's status and, once finished, its result or error.  A finished job is kept for
    ``CHRONOMEM_JOB_RETENTION`` seconds (default 7 days); after that it is gone (404)."""
    return job_out(mem.job(job_id))


@router.get("/users/{user_id}/jobs", response_model=Page[JobOut], tags=["ingestion"])
def list_jobs(user_id: UserId, mem: Mem, limit: Limit = pagination.DEFAULT_LIMIT, cursor: Cursor = None,
              status: Annotated[str | None, Query(pattern="^(queued|running|done|failed)$")] = None,
              ) -> dict[str, Any]:
    """The user's jobs, newest first."""
    found = mem.jobs(user_id=user_id, status=status, limit=limit + 1, after=pagination.JOBS.after(cursor))
    return read_page(found, limit, job_out, lambda j: pagination.JOBS.cursor(JobPosition.of(j)))


# -- users, sessions, messages ----------------------------------------------------------------------------
@router.get("/users", response_model=Page[UserOut], tags=["users"])
def list_users(mem: Mem, limit: Limit = pagination.DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    """The users of your tenant."""
    found = mem.users(limit=limit + 1, after=pagination.USERS.after(cursor))
    return read_page(found, limit, lambda u: {"user_id": u}, pagination.USERS.cursor)


@router.get("/users/{user_id}/sessions", response_model=Page[SessionOut], tags=["users"])
def list_sessions(user_id: UserId, mem: Mem, limit: Limit = pagination.DEFAULT_LIMIT,
                  cursor: Cursor = None) -> dict[str, Any]:
    """The user's sessions, oldest first (by their first turn): id, agent, started and ended (null while
    open)."""
    found = mem.sessions(user_id=user_id, limit=limit + 1, after=pagination.SESSIONS.after(cursor))
    return read_page(found, limit,
                     lambda s: {"id": s.id, "agent_id": s.agent_id, "started_at": s.started_at, "ended_at": s.ended_at},
                     lambda s: pagination.SESSIONS.cursor(SessionPosition.of(s)))


@router.get("/users/{user_id}/messages", response_model=Page[StoredMessageOut], tags=["users"])
def list_messages(user_id: UserId, mem: Mem, session_id: SessionQ = None,
                  limit: Limit = pagination.DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    """Stored turns, verbatim, in conversation order."""
    found = mem.messages(user_id=user_id, session_id=session_id, after=pagination.MESSAGES.after(cursor),
                         limit=limit + 1)
    return read_page(found, limit, lambda m: {"id": m.id, "session_id": m.session_id, "seq": m.seq,
                                              "speaker": m.speaker, "text": m.text, "timestamp": m.timestamp,
                                              "extracted": m.extracted},
                     lambda m: pagination.MESSAGES.cursor(MessagePosition.of(m)))


@router.get("/users/{user_id}/summary", response_model=SummaryOut, tags=["sessions"])
def summary(user_id: UserId, mem: Mem, as_of: IsoTime | None = None) -> dict[str, Any]:
    """The recursive summary after the last session that ended by ``as_of`` (default now)."""
    return {"user_id": user_id, "as_of": as_of, "summary": mem.summary(user_id=user_id, as_of=as_of)}


@router.post("/users/{user_id}/context", response_model=ContextOut, tags=["sessions"])
def context(user_id: UserId, body: ContextIn, mem: Mem) -> dict[str, Any]:
    """The message list for your next LLM call: the summary, then the conversation within the budget.  Tool
    rounds count against it and are kept whole (a result never without the turn that called the tool)."""
    msgs = [m.model_dump(exclude_unset=True) for m in body.messages]  # handed back as sent: a null stays null
    return {"messages": mem.context(msgs, user_id=user_id, budget_tokens=body.budget_tokens,
                                    strategy=body.strategy, keep_turns=body.keep_turns)}


# -- facts ------------------------------------------------------------------------------------------------------
@router.post("/users/{user_id}/facts", response_model=UpdateOut, tags=["facts"])
def add_facts(user_id: UserId, body: FactsIn, mem: Mem) -> dict[str, Any]:
    """Add structured facts through the non-destructive update rules."""
    rep = mem.add_facts(body.facts, user_id=user_id, session_id=body.session_id, agent_id=body.agent_id)
    return {"added": [fact_out(f) for f in rep.added], "closed": [fact_out(f) for f in rep.closed],
            "reinforced": [fact_out(f) for f in rep.reinforced]}


@router.get("/users/{user_id}/facts", response_model=Page[FactOut], tags=["facts"])
def list_facts(user_id: UserId, mem: Mem, subject: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None,
               relation: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None,
               object: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None, as_of: IsoTime | None = None,
               include_unstable: bool = False, other_side: bool = True, limit: Limit = pagination.DEFAULT_LIMIT,
               cursor: Cursor = None) -> dict[str, Any]:
    """Facts valid at ``as_of`` (default now), oldest first.  With ``subject`` or ``object`` given,
    symmetric and inverse facts stored from the other side are read from this one
    (``other_side``; marked ``origin`` derived, ``support_ids`` the stored fact)."""
    found = mem.facts(user_id=user_id, subject=subject, relation=relation, object=object, as_of=as_of,
                      include_unstable=include_unstable, other_side=other_side,
                      after=pagination.FACTS.after(cursor), limit=limit + 1)
    return _fact_page(found, limit)


@router.get("/users/{user_id}/history", response_model=Page[FactOut], tags=["facts"])
def history(user_id: UserId, mem: Mem, subject: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None,
            relation: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None,
            object: Annotated[str | None, Query(max_length=MAX_NAME_CHARS)] = None, other_side: bool = True,
            limit: Limit = pagination.DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    """Every stored version (open, closed, corrected, unstable), oldest first (``other_side``: as
    for the facts list)."""
    found = mem.history(user_id=user_id, subject=subject, relation=relation, object=object,
                        other_side=other_side, after=pagination.FACTS.after(cursor), limit=limit + 1)
    return _fact_page(found, limit)


def _fact(mem: Memory, user_id: str, fact_id: str) -> Fact:
    found = mem.store.facts(user_id, ids=[fact_id])
    if not found:
        raise NotFoundError(f"user {user_id!r} has no fact {fact_id!r}")
    return found[0]


@router.get("/users/{user_id}/facts/{fact_id}", response_model=FactOut, tags=["facts"])
def get_fact(user_id: UserId, fact_id: FactId, mem: Mem) -> dict[str, Any]:
    """One stored fact of the user, any version (closed, superseded or hedged ones too); 404 otherwise."""
    return fact_out(_fact(mem, user_id, fact_id))


@router.patch("/users/{user_id}/facts/{fact_id}", response_model=CorrectionOut, tags=["facts"])
def correct_fact(user_id: UserId, fact_id: FactId, body: FactPatch, mem: Mem) -> dict[str, Any]:
    """Correct a fact: a new version with origin ``corrected``; the old one stays in history, closed."""
    from ..correction import correct_fact as correct, correction_notes

    changes = body.model_dump(exclude_unset=True)
    old, new = correct(mem, user_id, fact_id, changes)
    return {"fact": fact_out(new), "corrected": fact_out(old), "notes": correction_notes(old, new, changes)}


@router.delete("/users/{user_id}/facts/{fact_id}", response_model=ForgetOut, tags=["forget"])
def forget_fact(user_id: UserId, fact_id: FactId, mem: Mem) -> dict[str, Any]:
    """Delete a fact for real (facts it had closed hold again).  404 when the user has no such fact, a
    retry after a success included: the fact is gone either way."""
    return asdict(mem.forget(user_id=user_id, fact_id=fact_id))


@router.get("/users/{user_id}/entities", response_model=Page[EntityOut], tags=["facts"])
def entities(user_id: UserId, mem: Mem, limit: Limit = pagination.DEFAULT_LIMIT,
             cursor: Cursor = None) -> dict[str, Any]:
    """The people, places and things the user's facts name, oldest first, each with its other names."""
    found = mem.entities(user_id=user_id, limit=limit + 1, after=pagination.ENTITIES.after(cursor))
    return read_page(found, limit, Entity.to_dict, lambda e: pagination.ENTITIES.cursor(EntityPosition.of(e)))


@router.post("/users/{user_id}/entities/aliases", response_model=EntityOut, tags=["facts"])
def add_alias(user_id: UserId, body: AliasIn, mem: Mem) -> dict[str, Any]:
    """Record one more name for an entity ("NYC" for "New York City").  422 when the alias already names
    another entity (`POST …/entities/merge` makes the two one)."""
    return mem.alias(body.name, body.alias, user_id=user_id).to_dict()


@router.post("/users/{user_id}/entities/merge", response_model=MergeOut, tags=["facts"])
def merge_entities(user_id: UserId, body: MergeIn, mem: Mem) -> dict[str, Any]:
    """Make two entities one ("Mom" and "Linda", kept apart by resolution): `name`'s facts and names move to
    `into`, its history is placed in time order with `into`'s, and a fact both said becomes one fact said
    twice.  404 when either names no entity of the user; 422 when both name the same one, or when a fact
    relates the two (merged, the entity would be related to itself: correct or forget it first)."""
    return mem.merge_entities(body.name, body.into, user_id=user_id).to_dict()


# -- retrieval -----------------------------------------------------------------------------------------------------
@router.post("/users/{user_id}/search", response_model=SearchOut, tags=["retrieval"])
def search(user_id: UserId, body: QueryIn, mem: Mem) -> dict[str, Any]:
    """The evidence for a query, without an answer: ranked facts valid at ``as_of`` (default now), the
    context an answer prompt would read, its size, and the search's trace.  No model call unless the
    memory's search options ask for one."""
    res = mem.search(body.query, user_id=user_id, as_of=body.as_of, top_k=body.top_k, speaker=body.speaker)
    return {"facts": [fact_out(f) for f in res.facts], "context": res.context,
            "context_tokens": res.context_tokens, "trace": res.trace.as_dict()}


@router.post("/users/{user_id}/answer", response_model=AnswerOut, tags=["retrieval"])
def answer(user_id: UserId, body: AskIn, mem: Mem) -> dict[str, Any]:
    """An answer from the memory (``method``: real+rsum, real or rsum) with the facts it read, its context
    size, the model's usage and the search's trace; "Not mentioned" when the memory holds nothing on it.
    A model failure is a 503."""
    ans = mem.answer(body.question, user_id=user_id, as_of=body.as_of, method=body.method, top_k=body.top_k,
                     speaker=body.speaker)
    return {"text": ans.text, "evidence": [fact_out(f) for f in ans.evidence],
            "context_tokens": ans.context_tokens, "usage": ans.usage, "method": ans.method,
            "trace": ans.trace.as_dict() if ans.trace is not None else None}


# -- forgetting, export, import -------------------------------------------------------------------------------------
@router.delete("/users/{user_id}/sessions/{session_id:path}", response_model=ForgetOut, tags=["forget"])
def forget_session(user_id: UserId, session_id: SessionId,
                   mem: Mem) -> dict[str, Any]:
    """Delete a session: its turns, the facts only they said, its summary, all at once.  Later summaries
    quoted it too: their texts are erased now and a job rewrites them without it (``job_id``, poll
    ``GET /v1/jobs/{job_id}``; ``summaries_pending`` of them), so the reply never waits on the model; until
    the job ran, the summary read is the one from before the session.  404 when the user has no such
    session, a retry after a success included."""
    return asdict(mem.forget(user_id=user_id, session_id=session_id))


@router.delete("/users/{user_id}", response_model=ForgetOut, tags=["forget"])
def forget_user(user_id: UserId, mem: Mem) -> dict[str, Any]:
    """Delete everything held for the user: turns (buffered ones too), sessions, facts, entities, summaries,
    jobs and the model cache's entries made for them.

    404 when nothing was held, as for an unknown fact or session; a retried DELETE after a success is
    therefore a 404 too (the user is gone either way: treat 404 as done).  The delete runs all the same,
    so no entry of the user's is ever left because the user looked unknown."""
    held = bool(mem.jobs(user_id=user_id, limit=1)) or bool(mem.store.checkpoint_heads(user_id))  # uncounted below
    res = mem.forget(user_id=user_id, everything=True)
    if not (held or res.facts_deleted or res.messages_deleted or res.sessions_deleted or res.entities_deleted
            or res.cache_entries_deleted or res.warnings):
        raise NotFoundError(f"user {user_id!r} holds nothing in this tenant")
    return asdict(res)


EXPORT_SPOOL_BYTES = 8 * 2**20  # an export larger than this waits on disk, not in memory, for the client


@router.get("/users/{user_id}/export", tags=["export"], response_class=StreamingResponse, responses={
    200: {"description": "The export, a JSON object", "content": {"application/json": {"schema": {"type": "object"}}}}})
def export(user_id: UserId, mem: Mem) -> StreamingResponse:
    """Everything stored for the user (format chronomem.export); POST it to /import to restore.

    Written a batch of rows at a time to a spooled file (memory up to 8 MiB, then a temporary file) while
    the user's rows are read in one transaction, then sent from it: the server never holds a large user's
    export in memory, and a slow client holds no lock.  404 when the user holds nothing in this tenant, as
    for ``DELETE`` (an empty export of a mistyped user would restore nothing)."""
    spool = tempfile.SpooledTemporaryFile(max_size=EXPORT_SPOOL_BYTES)
    try:
        with _spooling("export"):
            written = mem.export_to(spool, user_id=user_id)
            spool.seek(0)
        if not any(written.values()):
            raise NotFoundError(f"user {user_id!r} holds nothing in this tenant")
    except BaseException:
        spool.close()
        raise
    return StreamingResponse(iter(lambda: spool.read(2**20), b""), media_type="application/json",
                             background=BackgroundTask(spool.close))


@router.post("/users/{user_id}/import", tags=["export"], openapi_extra={"requestBody": {
    "required": True, "content": {"application/json": {"schema": {
        "type": "object", "description": "An export, as GET /export sends it"}}}}})
async def import_(user_id: UserId, request: Request, mem: Mem) -> dict[str, int]:
    """Load an export into the user: the rows added per table and `already_present` (rows held already).

    The body (up to 1 GiB, `chronomem.limits.MAX_IMPORT_BYTES`) is read as it arrives to a spooled file
    (memory up to 8 MiB, then a temporary file), then imported a batch of rows at a time in one
    transaction (`Memory.import_from`): a bad row anywhere is a 422 naming it, with nothing written."""
    with tempfile.SpooledTemporaryFile(max_size=EXPORT_SPOOL_BYTES) as spool:
        with _spooling("import"):
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size <= EXPORT_SPOOL_BYTES:
                    spool.write(chunk)
                else:  # on disk now: not on the event loop
                    await run_in_threadpool(spool.write, chunk)
            spool.seek(0)
        return await run_in_threadpool(mem.import_from, spool, user_id=user_id)


@contextmanager
def _spooling(what: str) -> Iterator[None]:
    """A temporary file that cannot be written (a full disk) is 507, not an unexplained 500."""
    try:
        yield
    except OSError as e:
        raise HTTPException(507, f"the server could not hold the {what} in a temporary file: "
                                 f"{e.strerror or e}") from e
