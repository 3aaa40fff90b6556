"""Lambda entry point for ``POST /v1/completions/derender``.

Built once per container, at import (the default model is loaded then, during init), and
reused by every invocation. Models come from ``DERENDER_MODELS_DIR`` (on Lambda the
tokenizer layer at ``/opt/tokenizers``).
"""

from derender.awslambda.adapter import LambdaHandler

handler = LambdaHandler()
