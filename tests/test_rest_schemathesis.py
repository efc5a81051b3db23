"""Schemathesis against REST v1's own OpenAPI document: no generated request gets a 5xx.

The app runs in process (ASGI) over SQLite with the in-process queue; model calls go to the
deterministic server of ``fake_openai.py``.  Examples per operation are capped
(``CHRONOMEM_SCHEMATHESIS_EXAMPLES``, default 15) so the run stays well under two minutes;
raise it for a deeper local run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fake_openai import FakeModelServer
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

from chronomem import Memory
from chronomem.server import create_app

# no 5xx, and every response is one the OpenAPI document declares, in its declared shape
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = int(os.environ.get("CHRONOMEM_SCHEMATHESIS_EXAMPLES", "15"))


def _app():  # built at import: schemathesis reads the OpenAPI document while collecting
    llm = FakeModelServer()
    os.environ.setdefault("CHRONOMEM_LLM_API_KEY", "test")
    os.environ.pop("CHRONOMEM_QUEUE_URL", None)
    os.environ.pop("CHRONOMEM_API_KEY", None)
    db = Path(tempfile.mkdtemp(prefix="chronomem-fuzz-")) / "m.db"
    mem = Memory(db, llm=llm.spec, embedder=False)
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2020-01-01"}],
                  user_id="u1")
    return create_app(mem), llm, db.parent


APP, LLM, TMP = _app()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    APP.state.tenancy.close()
    APP.state.memory.close()
    LLM.close()
    shutil.rmtree(TMP, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
def test_no_server_errors(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)
