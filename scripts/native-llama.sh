#!/bin/sh
# Build llama.cpp (the xllamacpp binding, same release as pyproject.toml pins) for this CPU's
# AVX-512 and install it into the venv in place of PyPI's portable wheel, which is built for AVX2.
# On a 2-core Xeon with AVX-512 the build reads prompts ~1.5x faster (BENCHMARKS.md "Models
# (local)"); decoding speed is memory-bound and unchanged.  The same GGUF weights and prompts, but
# not quite the same decoding: the CPU kernels round differently, and a JSON-schema request is
# held by llama.cpp's GBNF grammar engine, where the wheel (built with llguidance, a Rust crate
# this offline build cannot fetch) uses llguidance.  Hence opt-in:
#
#   make install NATIVE=1                     # runs this script (NATIVE=auto behaves the same)
#   make install NATIVE=0                     # puts the portable wheel back
#   make install                              # leaves whichever is installed
#
# Needs cmake and a C++ compiler; without them, without AVX-512, or if the build fails, the
# portable wheel stays and the script says why (it never fails the install).  The built wheel is
# kept in ~/.cache/chronomem/wheels/ under the release and the CPU flags it was built for, so a
# second install on the same machine (a fresh clone, CI) takes a second, not ~10 minutes.
# AMX stays off: llama.cpp's AMX kernels crash on this model (ggml_backend_amx_mul_mat segfault at
# load, llama.cpp issue 20824).  CPUINFO and PYTHON may point elsewhere (the tests do).
set -eu
PIP=${1:?usage: native-llama.sh PATH/TO/pip}
PYTHON=${PYTHON:-$(dirname "$PIP")/python}
CPUINFO=${CPUINFO:-/proc/cpuinfo}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

say() { echo "native-llama: $*" >&2; }
# does the installed binding report AVX-512 kernels? (false too when it does not import)
reports_avx512() {
  "$PYTHON" -c "import sys, xllamacpp; sys.exit('AVX512 = 1' not in xllamacpp.get_system_info())"
}
portable() { "$PIP" install --quiet --force-reinstall --no-deps "xllamacpp==$VERSION"; }

VERSION=$(sed -n 's/.*"xllamacpp==\([0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml" | head -n1)
[ -n "$VERSION" ] || { say "no xllamacpp==X pin in pyproject.toml; keeping the installed wheel"; exit 0; }

case "${NATIVE:-auto}" in
  0|no|off|false)
    # pip keeps an installed native build (same version): put the portable wheel back explicitly
    if reports_avx512 2>/dev/null; then
      say "NATIVE=${NATIVE}: reinstalling the portable xllamacpp wheel"
      portable
    else
      say "NATIVE=${NATIVE}: keeping the portable xllamacpp wheel"
    fi
    exit 0 ;;
  auto|1|yes|on|true) ;;
  *) say "NATIVE must be auto, 1 or 0, not '${NATIVE}'"; exit 2 ;;
esac

flags=$(grep -m1 '^flags' "$CPUINFO" 2>/dev/null || true)
has() { case " $flags " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if ! has avx512f || ! has avx512bw || ! has avx512vl || ! has avx512dq; then
  say "this CPU has no AVX-512 (F/BW/DQ/VL): the portable wheel (AVX2) is the right build"
  exit 0
fi
onoff() { if has "$1"; then echo ON; else echo OFF; fi; }
ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
ARGS="$ARGS -DGGML_BMI2=$(onoff bmi2) -DGGML_AVX_VNNI=$(onoff avx_vnni) -DGGML_AVX512=ON"
ARGS="$ARGS -DGGML_AVX512_VBMI=$(onoff avx512vbmi) -DGGML_AVX512_VNNI=$(onoff avx512_vnni)"
ARGS="$ARGS -DGGML_AVX512_BF16=$(onoff avx512_bf16)"
ARGS="$ARGS -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
# offline builds: llguidance is a Rust crate from crates.io, BoringSSL a git clone; neither is used here
ARGS="$ARGS -DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF"
if [ -n "${PRINT_ARGS:-}" ]; then echo "$ARGS"; exit 0; fi

KEY=$(echo "$VERSION $ARGS" | cksum | cut -d' ' -f1)
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/chronomem/wheels/xllamacpp-$VERSION-avx512-$KEY"
wheel=$(ls "$WHEELS"/xllamacpp-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  for tool in cmake c++; do
    command -v "$tool" >/dev/null 2>&1 || { say "no $tool: keeping the portable wheel"; exit 0; }
  done
  say "building xllamacpp $VERSION for AVX-512 (about 10 minutes on 2 cores; once per machine)"
  mkdir -p "$WHEELS"
  log="$WHEELS/build.log"
  if ! CMAKE_ARGS="$ARGS" NPROC="${NPROC:-$(nproc 2>/dev/null || echo 2)}" "$PIP" wheel --quiet --no-deps \
      --no-cache-dir --no-binary xllamacpp -w "$WHEELS" "xllamacpp==$VERSION" > "$log" 2>&1; then
    say "the build failed (log: $log); keeping the portable wheel"
    rm -f "$WHEELS"/xllamacpp-*.whl
    exit 0
  fi
  wheel=$(ls "$WHEELS"/xllamacpp-*.whl | head -n1)
fi
"$PIP" install --quiet --force-reinstall --no-deps "$wheel"
# the kernels must be the ones asked for, and the binding must load; otherwise back to the wheel
if ! reports_avx512; then
  say "the built binding does not report AVX-512; reinstalling the portable wheel"
  rm -rf "$WHEELS"
  portable
  exit 0
fi
say "installed xllamacpp $VERSION built for AVX-512 ($wheel)"
