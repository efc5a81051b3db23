"""Conversation file formats and the ``chronomem add`` command (store-only, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.errors import ValidationError
from chronomem.extract.formats import load_conversations, parse_conversations, sample_conversation_path

LOCOMO = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo" / "locomo_dev.json"
MSC = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "msc" / "msc_episodes_dev.json"


def test_bundled_sample_has_three_dated_sessions() -> None:
    (conv,) = load_conversations(sample_conversation_path())
    assert conv.kind == "chronomem" and len(conv.sessions) == 3
    assert [s.timestamp[:10] for s in conv.sessions] == ["2023-01-15", "2023-06-20", "2023-11-05"]
    text = " ".join(m["text"] for s in conv.sessions for m in s.messages)
    for needle in ("Berlin", "Munich", "Globex", "rehome Pixel", "might move to Paris"):
        assert needle in text


def test_plain_message_list() -> None:
    (conv,) = parse_conversations([{"speaker": "A", "text": "hi"}])
    assert conv.sessions[0].session_id is None and conv.turns == 1


def test_unknown_shape_is_rejected() -> None:
    with pytest.raises(ValidationError) as ei:
        parse_conversations({"foo": 1})
    assert ei.value.field == "file"


def test_bad_json_file(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{nope")
    with pytest.raises(ValidationError) as ei:
        load_conversations(p)
    assert ei.value.field == "file"


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_locomo_sessions_keep_dia_ids_and_dates() -> None:
    (conv,) = load_conversations(LOCOMO, sample="conv-26")
    s1 = conv.sessions[0]
    assert s1.session_id == "conv-26-s1" and s1.timestamp.startswith("2023-05-08T13:56")
    assert s1.messages[0]["id"] == "D1:1" and s1.messages[0]["speaker"] == "Caroline"
    assert any("[shares an image:" in m["text"] for s in conv.sessions for m in s.messages)
    with pytest.raises(ValidationError):
        load_conversations(LOCOMO, sample="conv-999")


@pytest.mark.skipif(not MSC.exists(), reason="MSC data not present")
def test_msc_episode_by_index() -> None:
    (conv,) = load_conversations(MSC, sample="0")
    assert conv.kind == "msc" and len(conv.sessions) == 3
    ts = [s.timestamp for s in conv.sessions]
    assert ts == sorted(ts)


def test_cli_add_store_only(tmp_path: Path) -> None:
    from chronomem.cli import app

    db = tmp_path / "m.db"
    runner = CliRunner()
    args = ["add", str(sample_conversation_path()), "--user", "maya", "--db", str(db), "--no-extract"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    r2 = runner.invoke(app, args)  # idempotent
    assert r2.exit_code == 0
    with Memory(db) as mem:
        msgs = mem.store.messages("maya")
        assert len(msgs) == 17 and len(mem.store.sessions("maya")) == 3
        assert len(mem.store.messages("maya", pending_only=True)) == 17


def test_cli_add_plain_list_with_session(tmp_path: Path) -> None:
    from chronomem.cli import app

    f = tmp_path / "c.json"
    f.write_text(json.dumps([{"speaker": "A", "text": "I live in Oslo."}]))
    r = CliRunner().invoke(app, ["add", str(f), "-u", "u1", "--db", str(tmp_path / "m.db"), "--session", "s9",
                                 "--timestamp", "2023-01-01", "--no-extract"])
    assert r.exit_code == 0, r.output
    with Memory(tmp_path / "m.db") as mem:
        (m,) = mem.store.messages("u1")
        assert m.session_id == "s9" and m.timestamp.year == 2023


def test_demo_runs_end_to_end_with_a_scripted_model(capsys: pytest.CaptureFixture[str]) -> None:
    from test_extract_pipeline import ScriptedLLM

    from chronomem.cli.add import run_demo

    with Memory(":memory:", llm=ScriptedLLM()) as mem:
        run_demo(mem)
        assert len(mem.store.messages("maya")) == 17
        assert mem.store.messages("maya", pending_only=True) == []
        assert mem.llm.calls and len(mem.llm.calls) == 3  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert "What is true now" in out and "Tentative" in out
