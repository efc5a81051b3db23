"""Checks of caller-supplied identifiers, shared by every layer.

Each raises :class:`~chronomem.errors.ValidationError` naming the field.
"""

from __future__ import annotations

from typing import Any

from .errors import ValidationError


def check_id(name: str, value: Any) -> str:
    """A non-empty string id (``session_id``, ``agent_id`` …)."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(name, value, "must be a non-empty string")
    return value


def check_user(user_id: Any) -> str:
    """``user_id`` is required everywhere: every memory belongs to a user."""
    if user_id is None:
        raise ValidationError("user_id", user_id, "is required: every memory belongs to a user")
    return check_id("user_id", user_id)
