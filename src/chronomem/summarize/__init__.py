"""Recursive summarisation (Rsum), in-session compaction and session buffers."""

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
    "MemoryUpdate",
    "RsumMemory",
    "build_memory_messages",
    "build_reply_messages",
    "generate_reply",
    "update_memory",
]
