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
MAX_CALL_TOKENS = "DERENDER_MAX_CALL_TOKENS"
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
WORKER_THREADS = "DERENDER_WORKER_THREADS"
INLINE_BODY_BYTES = "DERENDER_INLINE_BODY_BYTES"
SKIP_UNSERVABLE = "DERENDER_SKIP_UNSERVABLE"
ACCESS_LOG = "DERENDER_ACCESS_LOG"
METRICS = "DERENDER_METRICS"
LAMBDA_FUNCTION_NAME = "AWS_LAMBDA_FUNCTION_NAME"

MAX_BATCH_CHUNKS = 4096
"""Most engine chunks in one ``generate_chunks`` call (a schema limit, not configurable)."""

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
    max_call_tokens: int = 262144
    """Most work one call may ask for, in output ids plus logprob positions and candidates
    (prompt logprobs too) over all its choices and chunks (``bounds.call_work``); more is a
    400 before anything is decoded. A unit costs at most ~13 µs (a logprob candidate, the
    dearest; ``bench/cost_sweep.py``), so the default call stays well under the Lambda
    function's 10 s timeout at its default 1,769 MB."""
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
    511-character stop-string prefix and any parser's holdbacks at once) a state is at most
    9,611 characters (gemma4; ``tests/test_state_bounds.py`` for every parser)."""
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
    worker_threads: int = 0
    """Threads doing the CPU work of large calls off the event loop (0: one per core; -1:
    none, everything on the loop). Not used on Lambda."""
    inline_body_bytes: int = 16 * 1024
    """Bodies up to this size are worked on the event loop (cheaper for small calls); larger
    ones on the worker threads."""
    skip_unservable: bool = False
    """Folders of the models folder that cannot be served (no tokenizer file, an unreadable
    manifest) are skipped with a warning; by default they stop the start-up, named."""
    access_log: bool = True
    """One JSON log line per request (``derender.access``; on Lambda the invocation line)."""
    metrics: bool | None = None
    """``/metrics`` in Prometheus text format on the local server (never on Lambda, whose
    metrics are the invocation line's CloudWatch embedded metrics): None, when
    ``prometheus_client`` is installed (the ``server`` extra); True, required (start-up
    fails without it); False, off."""
    model_folders: tuple[Path, ...] = ()
    """Model folders to serve instead of the folders of ``models_dir`` (``derender serve
    DIR…``)."""
    manifests: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Per model folder name, manifest entries replacing the folder's ``derender.json`` ones
    (``derender serve --served-model-name/--max-model-len/--*-parser``)."""

    def __post_init__(self) -> None:
        if self.state_form not in STATE_FORMS:
            raise ValueError(f"{STATE_FORM} must be one of {', '.join(STATE_FORMS)}, "
                             f"not {self.state_form!r}")
        sources = [name for name, value in ((SIGNING_KEYS, self.signing_keys),
                                            (SIGNING_KEYS_SSM_PARAMETER,
                                             self.signing_keys_ssm_parameter),
                                            (SIGNING_KEYS_SECRET, self.signing_keys_secret))
                   if value]
        if len(sources) > 1:
            raise ValueError(f"set one signing key source, not {' and '.join(sources)}")

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
            max_call_tokens=_int(env, MAX_CALL_TOKENS, cls.max_call_tokens),
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
            worker_threads=_int(env, WORKER_THREADS, cls.worker_threads),
            inline_body_bytes=_int(env, INLINE_BODY_BYTES, cls.inline_body_bytes),
            skip_unservable=_flag(env, SKIP_UNSERVABLE, cls.skip_unservable) is True,
            access_log=_flag(env, ACCESS_LOG, cls.access_log) is True,
            metrics=_flag(env, METRICS, None),
        )


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _flag(env: Mapping[str, str], name: str, default: bool | None) -> bool | None:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE or raw in _FALSE:
        return raw in _TRUE
    raise ValueError(f"{name} must be one of {', '.join(_TRUE + _FALSE)}, got {raw!r}")


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
