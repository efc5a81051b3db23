"""The one prompt loader: versioned prompt files shipped inside the package.

Every prompt is a file ``<package>/prompts/<name>.md`` (or ``.txt``) whose name
carries its version (``extract_v3``, ``rsum_memory_v1``, ``answer_v1``): a new
wording is a new file, so the benchmark results and response caches made with
an old one stay reproducible.  :func:`load_prompt` returns a file's text;
:func:`load_template` a chat template split into its ``### system`` and
``### user`` sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .errors import ConfigError, ValidationError

__all__ = ["PromptTemplate", "load_prompt", "load_template"]

_NAME = re.compile(r"^[a-z0-9_]+_v[0-9]+$")
_SECTION = re.compile(r"^### (\w+)\s*$", re.M)
_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A chat prompt: the system message and the user message template (``str.format`` fields)."""

    version: str
    system: str
    user: str

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system.format(**values)},
            {"role": "user", "content": self.user.format(**values)},
        ]


@lru_cache(maxsize=64)
def load_prompt(package: str, name: str) -> str:
    """The text of ``prompts/<name>.md`` (or ``.txt``) in ``package`` (e.g. ``"chronomem.extract"``).

    Raises :class:`~chronomem.errors.ValidationError` for a name that is not
    versioned (``<words>_v<N>``) or names no file.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError("prompt", name, "expected a versioned prompt name like 'rsum_memory_v1'")
    folder = resources.files(package).joinpath("prompts")
    for suffix in _SUFFIXES:
        path = folder.joinpath(f"{name}{suffix}")
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise ValidationError("prompt", name, f"no such prompt file in {package}")


@lru_cache(maxsize=64)
def load_template(package: str, name: str) -> PromptTemplate:
    """The ``### system`` and ``### user`` sections of a prompt file, each stripped."""
    parts = _SECTION.split(load_prompt(package, name))
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    try:
        return PromptTemplate(name, sections["system"], sections["user"])
    except KeyError as exc:
        raise ConfigError(f"prompt {name!r} lacks a {exc.args[0]!r} section") from None
