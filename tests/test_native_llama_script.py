"""scripts/native-llama.sh: when `make install` builds llama.cpp for AVX-512, and what it never does.

The build itself (~10 minutes) is not run here; pip and python are stand-ins that record
what the script asked of them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "native-llama.sh"

AVX512_FLAGS = ("fpu sse sse2 avx avx2 fma f16c bmi2 avx512f avx512dq avx512bw avx512vl avx512_vnni "
                "avx512vbmi avx512_bf16 avx_vnni amx_tile amx_int8 amx_bf16")


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, Path]:
    log = tmp_path / "calls.log"
    pip = tmp_path / "pip"
    pip.write_text(f'#!/bin/sh\necho "pip $*" >> {log}\n')
    python = tmp_path / "python"  # exit 0 = "the installed binding reports AVX-512"
    python.write_text(f'#!/bin/sh\necho "python" >> {log}\nexit "${{FAKE_AVX512_EXIT:-0}}"\n')
    for exe in (pip, python):
        exe.chmod(0o755)
    return {"pip": pip, "python": python, "log": log, "home": tmp_path / "home"}


def run(tools: dict[str, Path], flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    cpuinfo = tools["log"].parent / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    full = {**os.environ, "CPUINFO": str(cpuinfo), "PYTHON": str(tools["python"]),
            "XDG_CACHE_HOME": str(tools["home"]), **env}
    return subprocess.run(["sh", str(SCRIPT), str(tools["pip"])], env=full, capture_output=True, text=True,
                          timeout=60)


def calls(tools: dict[str, Path]) -> list[str]:
    return tools["log"].read_text().splitlines() if tools["log"].exists() else []


def test_without_avx512_the_portable_wheel_stays(tools: dict[str, Path]) -> None:
    r = run(tools, "fpu sse sse2 avx avx2 fma f16c")
    assert r.returncode == 0
    assert "no AVX-512" in r.stderr
    assert calls(tools) == []


def test_build_flags_follow_the_cpu_and_never_enable_amx(tools: dict[str, Path]) -> None:
    args = run(tools, AVX512_FLAGS, PRINT_ARGS="1").stdout.split()
    assert "-DGGML_AVX512=ON" in args and "-DGGML_AVX512_VNNI=ON" in args and "-DGGML_NATIVE=OFF" in args
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)
    assert "-DLLAMA_LLGUIDANCE=OFF" in args  # a Rust crate from crates.io: no network for it
    plain = run(tools, "avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl", PRINT_ARGS="1").stdout.split()
    assert "-DGGML_AVX512_VNNI=OFF" in plain and "-DGGML_AVX512_BF16=OFF" in plain and "-DGGML_BMI2=OFF" in plain


def test_unknown_native_setting_is_an_error_that_names_it(tools: dict[str, Path]) -> None:
    r = run(tools, AVX512_FLAGS, NATIVE="maybe")
    assert r.returncode == 2
    assert "NATIVE must be auto, 1 or 0, not 'maybe'" in r.stderr
    assert not any(c.startswith("pip") for c in calls(tools))


def cached_wheel(tools: dict[str, Path]) -> Path:
    args = run(tools, AVX512_FLAGS, PRINT_ARGS="1").stdout.strip()
    version = next(line.split('"xllamacpp==')[1].split('"')[0]
                   for line in (ROOT / "pyproject.toml").read_text().splitlines() if '"xllamacpp==' in line)
    key = subprocess.run(["sh", "-c", f'echo "{version} {args}" | cksum | cut -d" " -f1'],
                         capture_output=True, text=True, check=True).stdout.strip()
    folder = tools["home"] / "chronomem" / "wheels" / f"xllamacpp-{version}-avx512-{key}"
    folder.mkdir(parents=True)
    wheel = folder / f"xllamacpp-{version}-cp310-abi3-linux_x86_64.whl"
    wheel.write_bytes(b"stand-in")
    return wheel


def test_a_cached_build_is_installed_without_rebuilding(tools: dict[str, Path]) -> None:
    wheel = cached_wheel(tools)
    r = run(tools, AVX512_FLAGS)
    assert r.returncode == 0, r.stderr
    pip_calls = [c for c in calls(tools) if c.startswith("pip")]
    assert pip_calls == [f"pip install --quiet --force-reinstall --no-deps {wheel}"]  # no `pip wheel`
    assert "installed xllamacpp" in r.stderr


def test_a_build_that_does_not_report_avx512_is_replaced_by_the_portable_wheel(tools: dict[str, Path]) -> None:
    wheel = cached_wheel(tools)
    r = run(tools, AVX512_FLAGS, FAKE_AVX512_EXIT="1")
    assert r.returncode == 0
    assert "reinstalling the portable wheel" in r.stderr
    pip_calls = [c for c in calls(tools) if c.startswith("pip")]
    assert pip_calls[-1].startswith("pip install --quiet --force-reinstall --no-deps xllamacpp==")
    assert not wheel.parent.exists()  # a bad build is not reused by the next install


def test_native_0_puts_the_portable_wheel_back(tools: dict[str, Path]) -> None:
    r = run(tools, AVX512_FLAGS, NATIVE="0")  # the stand-in python says a native build is installed
    assert r.returncode == 0
    assert [c for c in calls(tools) if c.startswith("pip")] == [
        c for c in calls(tools) if c.startswith("pip install --quiet --force-reinstall --no-deps xllamacpp==")]
    assert len([c for c in calls(tools) if c.startswith("pip")]) == 1
    r = run(tools, AVX512_FLAGS, NATIVE="0", FAKE_AVX512_EXIT="1")  # already portable: nothing to do
    assert "keeping the portable" in r.stderr
    assert len([c for c in calls(tools) if c.startswith("pip")]) == 1


def test_make_install_runs_the_script_only_when_native_is_asked_for() -> None:
    def dry(*args: str) -> str:
        return subprocess.run(["make", "-n", "install", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=60).stdout

    assert "native-llama.sh" not in dry()  # a plain install leaves the installed build alone
    assert "NATIVE=1 sh scripts/native-llama.sh" in dry("NATIVE=1")
    assert "NATIVE=0 sh scripts/native-llama.sh" in dry("NATIVE=0")
