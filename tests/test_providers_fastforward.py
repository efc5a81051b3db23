"""Fast-forward decoding (providers/fastforward.py): which schemas it takes, and that it writes
exactly the reply a scripted engine "wants", decoding only the free parts (no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chronomem.extract.line_observations import layout_for, schema_for_lines
from chronomem.providers import fastforward
from chronomem.providers.base import Messages
from chronomem.providers.local_llama import EngineSettings, LoadedEngine, LocalLlamaLLM, LocalModelRegistry

PROMPT = "<|im_start|>user\nTurns ...<|im_end|>\n<|im_start|>assistant\n"
WANTED = ('{"lines": [\n'
          '{"line": 3, "fact": {"statement": "Ann moved to \\"Lisbon\\" in May.", "subject": "Ann", '
          '"relation": "moved_to", "object": "Lisbon", "ended": false}},\n'
          '{"line": 4, "fact": null}\n'
          ']}')


class ScriptedEngine:
    """Continues a prompt toward a fixed reply, the way llama.cpp would under fill's grammars:
    a string call (stop '"') returns up to the next quote, an escaped one included; any other
    call returns one "token" of up to three characters."""

    def __init__(self, prompt: str, wanted: str) -> None:
        self.prompt, self.wanted = prompt, wanted
        self.calls: list[tuple[str, str, int, list[str] | None]] = []
        self.decoded: list[str] = []

    def __call__(self, prompt: str, grammar: str, n: int, stop: list[str] | None) -> fastforward.Step:
        self.calls.append((prompt, grammar, n, stop))
        assert prompt.startswith(self.prompt)
        done = prompt[len(self.prompt):]
        assert self.wanted.startswith(done), f"fill wrote {done[-40:]!r}, which the reply does not"
        rest = self.wanted[len(done):]
        if stop:
            text = rest[: rest.index('"')][:n * 4]
            finish = "length" if len(text) < rest.index('"') else "stop"
        else:
            text, finish = rest[:3], "length"
        self.decoded.append(text)
        tokens = max(1, -(-len(text) // 4))
        return fastforward.Step(text=text, prompt_tokens=2, completion_tokens=tokens, finish_reason=finish)


def test_the_v3_slot_schema_is_supported_and_variable_shapes_are_not() -> None:
    assert fastforward.supports(schema_for_lines([0, 1, 2]))
    assert fastforward.supports(schema_for_lines([0, 1], layout_for("observe_lines_v6")))  # nested, slim facts
    assert fastforward.supports(schema_for_lines([0, 1], layout_for("observe_lines_v3"))) is False  # slim slots: anyOf opening alike
    facts = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
             "required": ["facts"], "additionalProperties": False}
    assert not fastforward.supports(facts)  # a list of any length
    optional = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "required": ["a"], "additionalProperties": False}
    assert not fastforward.supports(optional)
    assert not fastforward.supports({"type": "string", "pattern": "^a"})
    assert not fastforward.supports({"type": "integer"})
    with pytest.raises(fastforward.UnsupportedSchema):
        fastforward.fill(facts, PROMPT, ScriptedEngine(PROMPT, ""), max_tokens=10)


def test_fill_writes_the_reply_and_decodes_only_its_free_parts() -> None:
    engine = ScriptedEngine(PROMPT, WANTED)
    filled = fastforward.fill(schema_for_lines([3, 4]), PROMPT, engine, max_tokens=400)
    assert filled.text == WANTED and not filled.truncated
    assert json.loads(filled.text)["lines"][0]["fact"]["statement"] == 'Ann moved to "Lisbon" in May.'
    decoded = "".join(engine.decoded)
    for fixed in ('"line"', '"fact"', '"statement"', '"subject"', '"relation"', '"object"', '"ended"', "[\n"):
        assert fixed not in decoded  # keys and punctuation were fed as prompt, never decoded
    assert filled.calls == len(engine.calls)
    assert filled.completion_tokens == sum(max(1, -(-len(t) // 4)) for t in engine.decoded)
    # no call's prompt ends in the space before a value: the value's first token carries it
    assert not any(p.endswith(": ") for p, *_ in engine.calls)
    # a string is decoded under its maxLength, the quote as its stop
    statement_calls = [c for c in engine.calls if c[3] == ['"'] and c[0].endswith('"statement": "')]
    assert statement_calls and "char{0,160}" in statement_calls[0][1]


KEYED = ('{"lines": {\n'
         '"3": {"statement": "Ann moved to Lisbon in May.", "relation": "moved_to", "object": "Lisbon"},\n'
         '"4": null\n'
         '}}')


def test_keyed_slots_are_written_one_per_line_as_their_prompt_shows() -> None:
    schema = schema_for_lines([3, 4], layout_for("observe_lines_v4"))
    assert fastforward.supports(schema)
    engine = ScriptedEngine(PROMPT, KEYED)
    filled = fastforward.fill(schema, PROMPT, engine, max_tokens=400)
    assert filled.text == KEYED and not filled.truncated
    decoded = "".join(engine.decoded)
    assert '"3"' not in decoded and '"relation"' not in decoded  # line keys and field names were fed, not decoded


def test_an_escaped_quote_does_not_end_the_string() -> None:
    engine = ScriptedEngine(PROMPT, WANTED)
    fastforward.fill(schema_for_lines([3, 4]), PROMPT, engine, max_tokens=400)
    strings = [c for c in engine.calls if c[3] == ['"']]
    # the statement took three string calls: up to \\", up to the next \\", then to its end
    assert [c[0][len(PROMPT):].endswith(('"statement": "', 'to \\"', 'Lisbon\\"')) for c in strings[:3]] == [True] * 3


def test_a_spent_budget_stops_mid_value_and_says_so() -> None:
    filled = fastforward.fill(schema_for_lines([3, 4]), PROMPT, ScriptedEngine(PROMPT, WANTED), max_tokens=5)
    assert filled.truncated and WANTED.startswith(filled.text) and len(filled.text) < len(WANTED)


# ----------------------------------------------------------------- through the local provider


class CompletionServer:
    """Stands in for ``xllamacpp.Server``'s completion endpoint, answering from a ScriptedEngine."""

    def __init__(self, engine: ScriptedEngine) -> None:
        self.engine = engine
        self.requests: list[dict[str, Any]] = []

    def handle_completions(self, req: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(req)
        step = self.engine(req["prompt"], req["grammar"], req["n_predict"], req.get("stop"))
        return {"choices": [{"text": step.text, "finish_reason": step.finish_reason}],
                "timings": {"prompt_n": step.prompt_tokens, "predicted_n": step.completion_tokens}}

    def handle_chat_completions(self, req: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise AssertionError("a fast-forward call must not go through chat completions")


class TemplateEngine(LoadedEngine):
    def apply_template(self, messages: Messages) -> str:
        return PROMPT


class Registry(LocalModelRegistry):
    def __init__(self, server: CompletionServer) -> None:
        super().__init__()
        self.server = server

    def get(self, settings: EngineSettings) -> LoadedEngine:
        return TemplateEngine(settings=settings, server=self.server, address="http://127.0.0.1:0", api_key="k",
                              load_s=0.0)


def test_the_local_provider_fills_a_supported_schema_when_asked(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF....")
    server = CompletionServer(ScriptedEngine(PROMPT, WANTED))
    llm = LocalLlamaLLM(gguf, registry=Registry(server), fast_forward=True)
    assert llm.name.endswith(":ff")  # its replies are cached apart from one-call decoding's
    res = llm.chat([{"role": "user", "content": "Turns ..."}], schema=schema_for_lines([3, 4]), max_tokens=400)
    assert res.data["lines"][1] == {"line": 4, "fact": None}
    assert res.usage.completion_tokens == sum(max(1, -(-len(t) // 4)) for t in server.engine.decoded)
    assert all(r["temperature"] == 0.0 and r["cache_prompt"] for r in server.requests)
    plain = LocalLlamaLLM(gguf, registry=Registry(server))
    assert not plain.name.endswith(":ff") and plain.fast_forward is False


def test_an_engine_error_during_a_fill_is_a_model_error_with_its_message(tmp_path: Path) -> None:
    from chronomem.errors import ModelError

    class Refusing(CompletionServer):
        def handle_completions(self, req: dict[str, Any]) -> dict[str, Any]:
            return {"error": {"message": "failed to parse grammar"}}

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF....")
    llm = LocalLlamaLLM(gguf, registry=Registry(Refusing(ScriptedEngine(PROMPT, WANTED))), fast_forward=True)
    with pytest.raises(ModelError, match="failed to parse grammar"):
        llm.chat([{"role": "user", "content": "Turns ..."}], schema=schema_for_lines([3, 4]), max_tokens=400)
