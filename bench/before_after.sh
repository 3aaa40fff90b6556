#!/bin/sh
# Streams measured with the code before a change and after it, in one run: per format, the two
# sides run at the same time (same machine, same load), then the next format
# (docs/benchmarks.md section 22). BASE is the src/ directory of the code before:
#   git archive main src | tar -x -C /tmp/base     # the code before
#   cd bench && sh before_after.sh /tmp/base/src SCALE hy_v4 step3-tools ...
# NAMEs are engine_stream.py's; "hermes" is parser_stream.py's Qwen3 stream (qwen3 + hermes).
set -e
base=$1
scale=$2
shift 2
py=../.venv/bin/python
out=$(mktemp -d)
side() {  # side NAME SRC
  if [ "$1" = hermes ]; then
    PYTHONPATH=$2 $py parser_stream.py --no-http --scale "$scale" --passes 3
  else
    PYTHONPATH=$2 $py engine_stream.py --only "$1" --scale "$scale" --passes 3
  fi
}
for name in "$@"; do
  side "$name" "$base" > "$out/before" 2>&1 &
  side "$name" ../src > "$out/after" 2>&1
  wait
  echo "=== $name before"; cat "$out/before"
  echo "=== $name after"; cat "$out/after"
done
rm -r "$out"
