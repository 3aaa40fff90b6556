"""Replay a Lambda event through a function's real handler: ``sam local invoke`` without Docker.

``python -m derender.awslambda.replay [FUNCTION] EVENT_FILE [--body]`` loads
``functions/<FUNCTION>/handler.py`` (or, outside a checkout, builds ``LambdaHandler()`` the
same way), calls its ``handler(event, context)`` with a fake Lambda context and prints the
Lambda response as JSON on stdout; ``--body`` also prints the decoded body, pretty-printed.
FUNCTION (``chat_completions`` or ``completions``) defaults to the one serving the event's
path. The handler's own log line goes to stderr, so stdout stays parseable.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import importlib.util
import json
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from derender.awslambda.telemetry import event_path
from derender.contract import routes
from derender.settings import MODELS_DIR

ROOT = Path(__file__).resolve().parents[2]
"""The checkout holding ``functions/`` and ``layers/`` (when running from one)."""
FUNCTIONS = ("chat_completions", "completions")
PATHS = {routes.CHAT.path: "chat_completions", routes.COMPLETIONS.path: "completions"}
"""Path → the function serving it; any other path (``/health``…) goes to the first."""

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass(frozen=True)
class FakeLambdaContext:
    """The attributes of Lambda's context object that handlers and Mangum read."""

    function_name: str
    aws_request_id: str
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    identity: None = None
    client_context: None = None

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "replay/[$LATEST]" + self.aws_request_id.replace("-", "")

    def get_remaining_time_in_millis(self) -> int:
        """As if the whole 30 s timeout were left."""
        return 30_000


def infer_function(event: Any) -> str:
    """The function serving the event's path."""
    return PATHS.get(event_path(event) or "", FUNCTIONS[0])


def load_handler(function: str) -> Handler:
    """``handler`` of ``functions/<function>/handler.py``, or a fresh ``LambdaHandler()``."""
    if function not in FUNCTIONS:
        raise ValueError(f"unknown function {function!r}; expected one of {FUNCTIONS}")
    if MODELS_DIR not in os.environ and (ROOT / "layers" / "tokenizers").is_dir():
        os.environ[MODELS_DIR] = str(ROOT / "layers" / "tokenizers")
    path = ROOT / "functions" / function / "handler.py"
    if not path.is_file():
        from derender.awslambda.adapter import LambdaHandler  # noqa: PLC0415 (slow import)

        return LambdaHandler()
    spec = importlib.util.spec_from_file_location(f"functions.{function}.handler", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = module.handler
    return handler


def decoded_body(response: dict[str, Any]) -> Any:
    """The response body as JSON (or text when it is not JSON)."""
    raw = response.get("body") or ""
    text = base64.b64decode(raw).decode("utf-8") if response.get("isBase64Encoded") else raw
    try:
        return json.loads(text)
    except ValueError:
        return text


def replay(function: str | None, event: dict[str, Any],
           request_id: str | None = None) -> dict[str, Any]:
    """The Lambda response of ``function`` (inferred when None) to ``event``."""
    name = function or infer_function(event)
    with contextlib.redirect_stdout(sys.stderr):  # init and the per-invocation log line
        handler = load_handler(name)
        context = FakeLambdaContext(function_name=f"derender-{name.replace('_', '-')}",
                                    aws_request_id=request_id or str(uuid.uuid4()))
        return handler(event, context)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m derender.awslambda.replay",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("args", nargs="+", metavar="[FUNCTION] EVENT_FILE",
                        help=f"function ({', '.join(FUNCTIONS)}; default: from the path) "
                             "and the event JSON file")
    parser.add_argument("--body", action="store_true", help="also print the decoded body")
    parser.add_argument("--request-id", help="aws_request_id of the context (default: random)")
    options = parser.parse_args(argv)
    if len(options.args) > 2:
        parser.error("expected [FUNCTION] EVENT_FILE")
    function = options.args[0] if len(options.args) == 2 else None
    if function is not None and function not in FUNCTIONS:
        parser.error(f"FUNCTION must be one of {', '.join(FUNCTIONS)}")
    event = json.loads(Path(options.args[-1]).read_text(encoding="utf-8"))
    response = replay(function, event, options.request_id)
    sys.stdout.write(json.dumps(response, ensure_ascii=False) + "\n")
    if options.body:
        sys.stdout.write(json.dumps(decoded_body(response), indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
