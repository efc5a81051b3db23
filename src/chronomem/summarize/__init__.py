"""Recursive summarisation (Rsum), in-session compaction and session buffers."""

from .buffer import InMemorySessionBuffer, RedisSessionBuffer, SessionBuffer, make_buffer
from .compaction import CompactionResult, Strategy, compact, memory_system_message
from .lifecycle import SessionEnd, SessionLifecycle, turns_as_chat
from .rsum import (
    DEFAULT_MAX_SENTENCES,
    NO_MEMORY,
    MemoryUpdate,
    RsumMemory,
    build_memory_messages,
    build_reply_messages,
    generate_reply,
    update_memory,
)

__all__ = [
    "DEFAULT_MAX_SENTENCES",
    "NO_MEMORY",
    "CompactionResult",
    "InMemorySessionBuffer",
    "MemoryUpdate",
    "RedisSessionBuffer",
    "RsumMemory",
    "SessionBuffer",
    "SessionEnd",
    "SessionLifecycle",
    "Strategy",
    "build_memory_messages",
    "build_reply_messages",
    "compact",
    "generate_reply",
    "make_buffer",
    "memory_system_message",
    "turns_as_chat",
    "update_memory",
]
