#!/bin/sh
# Print the path of a Python 3.12, the Lambda runtime's version: $LAMBDA_PYTHON, python3.12 on
# PATH, or one installed by pyenv. Exit status 1, printing nothing, when there is none.
for p in "${LAMBDA_PYTHON:-}" python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
  if [ -n "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null
  then
    command -v "$p"
    exit 0
  fi
done
exit 1
