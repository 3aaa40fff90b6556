#!/usr/bin/env bash
# Copy test model folders (tests/models/NAME, tokenizer unpacked, derived or fetched first) into
# the vLLM peer's models folder, as the recordings used them (docs/recording/README.md):
#   scripts/peer-model-folders.sh deepseek-v3.1 deepseek-v3.2 deepseek-v4-native ...
# PEER_HOME defaults to $HOME/vllm-peer (the peer's install.sh default).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER_HOME=${PEER_HOME:-$HOME/vllm-peer}
for name in "$@"; do
  folder=$(cd "$ROOT" && .venv/bin/python -c \
    "import sys; from derender_testing.models import model_folder, require_model; \
require_model(sys.argv[1]); print(model_folder(sys.argv[1]))" "$name")
  mkdir -p "$PEER_HOME/models/$name"
  cp "$folder"/*.json "$PEER_HOME/models/$name/"
  cp "$folder"/*.jinja "$PEER_HOME/models/$name/" 2>/dev/null || true
done
ls "$PEER_HOME/models"
