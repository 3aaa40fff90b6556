#!/usr/bin/env bash
# Build the two Lambda layers: build-layers.sh ARCH OUT PYTHON [LAMBDA_PYTHON]
#   OUT/deps/python/      the derender package and what it imports, wheels for ARCH
#                         (arm64 or x86_64), Python 3.12, byte-compiled → /opt/python
#   OUT/tokenizers/tokenizers/<model>/  layers/tokenizers/ with decode-only decode.json for its
#                         tokenizer.json, tekken.json or tiktoken.model, each verified
#                         against its original → /opt/tokenizers
# PYTHON runs pip and the compaction (the project's venv); LAMBDA_PYTHON, a Python 3.12,
# byte-compiles the layer: /opt is read-only on Lambda, so without .pyc files every cold
# start would compile every module again.
set -euo pipefail
arch=$1 out=$2 python=$3 lambda_python=${4:-}
case "$arch" in
  arm64) machine=aarch64 ;;
  x86_64) machine=x86_64 ;;
  *) echo "ARCH must be arm64 or x86_64, not $arch" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out/wheel" "$out/deps/python" "$out/tokenizers/tokenizers"

"$python" -m pip wheel -q --no-deps --wheel-dir "$out/wheel" .
# The dependencies exactly as uv.lock pins them (the versions the tests ran), nothing
# resolved again: the service's own dependencies, no extras. Lambda's python3.12 runs on
# Amazon Linux 2023 (glibc 2.34): manylinux wheels up to 2.34.
"$python" -m uv export -q --locked --no-dev --no-emit-project --no-hashes \
  --format requirements-txt -o "$out/requirements.txt"
for requirement in "-r $out/requirements.txt" "$(ls "$out"/wheel/derender-*.whl)"; do
  # shellcheck disable=SC2086 # the -r and its file are two words
  "$python" -m uv pip install -q --target "$out/deps/python" --python-version 3.12 \
    --python-platform "${machine}-manylinux_2_34" --only-binary :all: --no-deps $requirement
done
rm -rf "$out/wheel" "$out/deps/python/bin" "$out/requirements.txt"
"$python" - "$out/deps/python" "$machine" <<'PY'
import pathlib, sys  # every native extension must be built for the layer's architecture
want = {"aarch64": 0xB7, "x86_64": 0x3E}[sys.argv[2]]  # ELF e_machine
for library in pathlib.Path(sys.argv[1]).rglob("*.so"):
    if int.from_bytes(library.read_bytes()[18:20], "little") != want:
        sys.exit(f"{library} is not built for {sys.argv[2]}")
PY
"$python" scripts/prune_layer.py "$out/deps/python" derender --drop huggingface-hub
find "$out/deps/python" -name __pycache__ -type d -prune -exec rm -rf {} +
if [ -n "$lambda_python" ]; then
  "$lambda_python" -m compileall -q -j 0 --invalidation-mode unchecked-hash "$out/deps/python"
else
  echo "warning: no Python 3.12 found: the dependencies layer is not byte-compiled" >&2
fi

"$python" -m derender.compact layers/tokenizers "$out/tokenizers/tokenizers" \
  --text bench/corpus.txt
du -sh "$out/deps" "$out/tokenizers"
