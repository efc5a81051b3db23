"""Conversation files → sessions of message dicts for :meth:`WritePipeline.add`.

Recognised shapes (detected from the JSON itself):

* a list of message dicts — one session;
* ``{"sessions": [{"session_id", "timestamp", "messages": [...]}, ...]}`` —
  chronomem's multi-session format (the bundled sample uses it);
* LoCoMo — a record, or a list of records, with ``conversation`` holding
  ``session_N`` / ``session_N_date_time``; turn ids are the ``dia_id``s, image
  turns carry their caption;
* MSC — an episode, or a list of episodes, with ``sessions[].turns`` and
  ``time_back`` gaps (absolute times are synthetic, in order).

LoCoMo and MSC parsing is :mod:`chronomem.conversations`.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ValidationError


@dataclass(slots=True)
class SessionInput:
    session_id: str | None
    timestamp: str | None
    messages: list[dict[str, Any]]


@dataclass(slots=True)
class ConversationInput:
    """One conversation: its sessions in order, and an id usable as a default user."""

    conversation_id: str
    sessions: list[SessionInput] = field(default_factory=list)
    kind: str = "messages"

    @property
    def turns(self) -> int:
        return sum(len(s.messages) for s in self.sessions)


def _is_locomo(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("conversation"), dict)


def _is_msc(rec: Any) -> bool:
    return (isinstance(rec, dict) and isinstance(rec.get("sessions"), list) and rec["sessions"]
            and isinstance(rec["sessions"][0], dict) and "turns" in rec["sessions"][0])


def _from_records(conv: Any, kind: str, prefix: str) -> ConversationInput:
    out = ConversationInput(conversation_id=conv.sample_id, kind=kind)
    for s in conv.sessions:
        msgs = []
        for t in s.turns:
            text = t.text if not t.blip_caption else f"{t.text} [shares an image: {t.blip_caption}]"
            msgs.append({"id": f"{prefix}{t.dia_id}", "speaker": t.speaker, "text": text})
        ts = s.date_time.isoformat() if s.date_time else None
        out.sessions.append(SessionInput(f"{conv.sample_id}-s{s.index}", ts, msgs))
    return out


def parse_conversations(data: Any, *, sample: str | None = None) -> list[ConversationInput]:
    """Detect the shape of ``data`` (parsed JSON) and return its conversations.

    ``sample`` picks one LoCoMo ``sample_id`` / MSC episode id (or index) out of a list.
    """
    from .. import conversations as ds

    records = data if isinstance(data, list) else [data]
    if records and all(_is_locomo(r) for r in records):
        convs = [ds.parse_locomo_record(r) for r in records]
        out = [_from_records(c, "locomo", "") for c in convs]
    elif records and all(_is_msc(r) for r in records):
        eps = [ds.parse_msc_episode(r) for r in records]
        out = [_from_records(e.conversation, "msc", f"{e.episode_id}:") for e in eps]
    elif isinstance(data, dict) and isinstance(data.get("sessions"), list):
        conv = ConversationInput(conversation_id=str(data.get("user") or data.get("id") or "conversation"),
                                 kind="chronomem")
        for i, s in enumerate(data["sessions"]):
            if not isinstance(s, dict) or not isinstance(s.get("messages"), list):
                raise ValidationError(f"sessions[{i}].messages", None, "each session needs a list of messages")
            conv.sessions.append(SessionInput(s.get("session_id") or s.get("id"), s.get("timestamp"),
                                              list(s["messages"])))
        out = [conv]
    elif isinstance(data, list):
        out = [ConversationInput("conversation", [SessionInput(None, None, list(data))])]
    else:
        raise ValidationError("file", type(data).__name__,
                              "expected a list of messages, {'sessions': [...]}, LoCoMo or MSC JSON")
    if sample is not None:
        picked = [c for c in out if c.conversation_id == sample]
        if not picked and sample.isdigit() and int(sample) < len(out):
            picked = [out[int(sample)]]
        if not picked:
            raise ValidationError("sample", sample, f"not found; have {[c.conversation_id for c in out][:10]}")
        out = picked
    return out


def load_conversations(path: str | Path, *, sample: str | None = None) -> list[ConversationInput]:
    p = Path(path)
    try:  # utf-8-sig: a byte order mark (editors on Windows write one) is skipped, as `import` does
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except OSError as e:
        raise ValidationError("file", str(p), f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValidationError("file", str(p), f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValidationError("file", str(p), f"not valid JSON ({e.msg} at line {e.lineno})") from None
    try:
        return parse_conversations(data, sample=sample)
    except ValidationError as e:
        if e.field != "file":
            raise
        # parse_conversations knows only the data, and names its JSON type: name the file it came from
        raise ValidationError("file", str(p), f"{e.reason} (it holds a JSON {_json_type(data)})") from None


def _json_type(data: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if data is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(data), "number")


def sample_conversation_path() -> Path:
    """Path of the bundled multi-session sample (copied out of a zip install if needed)."""
    from importlib import resources

    res = resources.files("chronomem").joinpath("data", "sample_conversation.json")
    if isinstance(res, Path):
        return res
    tmp = Path(tempfile.gettempdir()) / "chronomem_sample_conversation.json"
    tmp.write_text(res.read_text("utf-8"), encoding="utf-8")
    return tmp
