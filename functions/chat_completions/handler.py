"""Lambda entry point for ``POST /v1/chat/completions/derender``: the app behind Mangum.

Built once per container, at import, and reused by every invocation it serves. Models come
from ``DERENDER_MODELS_DIR`` (on Lambda the tokenizer layer at ``/opt/tokenizers``).
"""

from mangum import Mangum

from derender.app.main import create_app

handler = Mangum(create_app(), lifespan="off")
