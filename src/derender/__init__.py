"""derender: token ids from a generate engine back into OpenAI responses (vLLM 0.33's derender
API), for AWS Lambda and a local server."""

__version__ = "0.1.0"
"""The one place the version is written: ``pyproject.toml`` reads it (setuptools' dynamic
version), ``/version``, the start-up lines and the OpenAPI document answer it (no metadata
lookup at import: it costs a cold start milliseconds)."""
