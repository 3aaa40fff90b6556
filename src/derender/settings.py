"""Configuration, read once from the environment into a frozen object.

Every variable name is a constant here; precedence is explicit argument, then environment,
then default (as in AWS Powertools).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

MODELS_DIR = "DERENDER_MODELS_DIR"
DEFAULT_MODEL = "DERENDER_DEFAULT_MODEL"
MAX_N_SEQUENCES = "DERENDER_MAX_N_SEQUENCES"
MAX_BODY_BYTES = "DERENDER_MAX_BODY_BYTES"
SIGNING_KEYS = "DERENDER_SIGNING_KEYS"
SIGNING_KEYS_SSM_PARAMETER = "DERENDER_SIGNING_KEYS_SSM_PARAMETER"
SIGNING_KEYS_SECRET = "DERENDER_SIGNING_KEYS_SECRET"
SIGNING_KEYS_TTL_SECONDS = "DERENDER_SIGNING_KEYS_TTL_SECONDS"
MODELS_S3_URI = "DERENDER_MODELS_S3_URI"
MODELS_CACHE_DIR = "DERENDER_MODELS_CACHE_DIR"
STATE_TTL_SECONDS = "DERENDER_STATE_TTL_SECONDS"
MAX_STATE_CHARS = "DERENDER_MAX_STATE_CHARS"
STATE_FORM = "DERENDER_STATE_FORM"
STATE_FORMS = ("object", "string")
MAX_STOP_STRINGS = "DERENDER_MAX_STOP_STRINGS"
MAX_STOP_STRING_CHARS = "DERENDER_MAX_STOP_STRING_CHARS"
MAX_TOOLS = "DERENDER_MAX_TOOLS"
MAX_TOOL_SCHEMA_BYTES = "DERENDER_MAX_TOOL_SCHEMA_BYTES"
PARSERS = "DERENDER_PARSERS"
LAMBDA_FUNCTION_NAME = "AWS_LAMBDA_FUNCTION_NAME"

LAMBDA_LAYER_MODELS = Path("/opt/tokenizers")
"""Where the tokenizer layer's ``tokenizers/`` folder is mounted on Lambda."""
LOCAL_MODELS = Path("layers/tokenizers")
"""The repository's models folder, used when running from a checkout."""
DEFAULT_MODELS_CACHE = Path("/tmp/derender-models")
"""Where models listed under ``DERENDER_MODELS_S3_URI`` are downloaded."""


@dataclass(frozen=True)
class Settings:
    """What the service needs to know about its environment."""

    models_dir: Path
    """Folder with one Hugging Face style model folder per served model."""
    default_model: str | None = None
    """Served name answering requests whose ``model`` is null or empty; None: the first
    model folder in name order."""
    max_n_sequences: int = 16384
    """Most ``generate_responses`` per completions call and choices per response (vLLM's
    ``VLLM_MAX_N_SEQUENCES``)."""
    max_body_bytes: int = 32 * 1024 * 1024
    """Largest request body accepted; larger ones get 413 before parsing."""
    signing_keys: str | None = field(default=None, repr=False)
    """Stream-state key ring, ``id:secret[,id:secret...]``; the first entry signs."""
    signing_keys_ssm_parameter: str | None = None
    """SSM parameter (SecureString) holding the key ring, read with decryption; replaces
    ``signing_keys``."""
    signing_keys_secret: str | None = None
    """Secrets Manager secret id (or ARN) whose string holds the key ring; replaces
    ``signing_keys``."""
    signing_keys_ttl_seconds: int = 300
    """How long a key ring read from AWS is used before it is read again (rotation)."""
    models_s3_uri: str | None = None
    """``s3://bucket/prefix/``: model folders under the prefix, downloaded once per process
    to ``models_cache_dir`` and served instead of ``models_dir``."""
    models_cache_dir: Path = DEFAULT_MODELS_CACHE
    """Local folder the S3 models are downloaded to."""
    state_ttl_seconds: int = 3600
    """How long a stream's state stays valid, counted from its first chunk."""
    max_state_chars: int = 12288
    """Largest ``stream_state`` token accepted (checked before decoding). Must hold every
    state the service issues: with every holdback at its bound in 4-byte characters (a
    511-character stop-string prefix and a 1,024-character hermes call head) a state is
    8,208 characters (``tests/test_state_token.py``)."""
    state_form: str = "object"
    """How ``stream_state`` is answered: ``object`` (a JSON object, as vLLM 0.33 types it) or
    ``string`` (the bare token of earlier releases, for clients that still type it a string).
    Both forms are accepted back whatever this says."""
    max_stop_strings: int = 4
    """Most stop strings in the embedded request's ``stop`` (vLLM's ``VLLM_MAX_STOP_STRINGS``);
    must be at least what the render step accepts."""
    max_stop_string_chars: int = 512
    """Longest stop string, in characters. Streaming holds back up to one character less
    than the longest one in the state, so this keeps that holdback (at most 2 KiB of UTF-8)
    well inside ``max_state_chars``."""
    max_tools: int = 128
    """Most entries in ``chat_request.tools`` (OpenAI's limit)."""
    max_tool_schema_bytes: int = 64 * 1024
    """Largest tool definition in ``chat_request.tools`` (its JSON, parameters schema
    included, in UTF-8 bytes)."""
    parsers: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Per model folder, (reasoning parser, tool parser) replacing its manifest's; from
    ``folder:reasoning:tool[,...]`` (an empty name is none)."""
    on_lambda: bool = False
    """Running inside AWS Lambda: streaming refuses to work without a configured key."""

    def __post_init__(self) -> None:
        if self.state_form not in STATE_FORMS:
            raise ValueError(f"{STATE_FORM} must be one of {', '.join(STATE_FORMS)}, "
                             f"not {self.state_form!r}")
        if self.signing_keys_ssm_parameter and self.signing_keys_secret:
            raise ValueError(f"set one of {SIGNING_KEYS_SSM_PARAMETER} and "
                             f"{SIGNING_KEYS_SECRET}, not both")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        models = env.get(MODELS_DIR)
        if models:
            models_dir = Path(models)
        elif LAMBDA_LAYER_MODELS.is_dir():
            models_dir = LAMBDA_LAYER_MODELS
        else:
            models_dir = LOCAL_MODELS
        return cls(
            models_dir=models_dir,
            default_model=env.get(DEFAULT_MODEL) or None,
            max_n_sequences=_int(env, MAX_N_SEQUENCES, cls.max_n_sequences),
            max_body_bytes=_int(env, MAX_BODY_BYTES, cls.max_body_bytes),
            signing_keys=env.get(SIGNING_KEYS) or None,
            signing_keys_ssm_parameter=env.get(SIGNING_KEYS_SSM_PARAMETER) or None,
            signing_keys_secret=env.get(SIGNING_KEYS_SECRET) or None,
            signing_keys_ttl_seconds=_int(env, SIGNING_KEYS_TTL_SECONDS,
                                          cls.signing_keys_ttl_seconds),
            models_s3_uri=env.get(MODELS_S3_URI) or None,
            models_cache_dir=Path(env.get(MODELS_CACHE_DIR) or DEFAULT_MODELS_CACHE),
            state_ttl_seconds=_int(env, STATE_TTL_SECONDS, cls.state_ttl_seconds),
            max_state_chars=_int(env, MAX_STATE_CHARS, cls.max_state_chars),
            state_form=env.get(STATE_FORM) or cls.state_form,
            max_stop_strings=_int(env, MAX_STOP_STRINGS, cls.max_stop_strings),
            max_stop_string_chars=_int(env, MAX_STOP_STRING_CHARS, cls.max_stop_string_chars),
            max_tools=_int(env, MAX_TOOLS, cls.max_tools),
            max_tool_schema_bytes=_int(env, MAX_TOOL_SCHEMA_BYTES, cls.max_tool_schema_bytes),
            parsers=_parsers(env.get(PARSERS) or ""),
            on_lambda=bool(env.get(LAMBDA_FUNCTION_NAME)),
        )


def _parsers(spec: str) -> dict[str, tuple[str | None, str | None]]:
    choices: dict[str, tuple[str | None, str | None]] = {}
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        parts = entry.split(":")
        if len(parts) != 3 or not parts[0]:
            raise ValueError(f"{PARSERS} entries are folder:reasoning_parser:tool_parser, "
                             f"got {entry!r}")
        choices[parts[0]] = (parts[1] or None, parts[2] or None)
    return choices


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value
