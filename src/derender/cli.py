"""The ``derender`` command: serve, replay a Lambda event, compact model folders, make a key.

    derender serve [MODEL_DIR ...] [--host H] [--port P] [--served-model-name NAME ...]
                   [--reasoning-parser NAME] [--tool-call-parser NAME] [--max-model-len N]
    derender replay [FUNCTION] EVENT_FILE [--body]
    derender compact SRC DST
    derender keygen [--id ID]

``serve`` takes vLLM's flag names where they mean the same. Without a MODEL_DIR it serves
the folders of ``DERENDER_MODELS_DIR`` (default ``layers/tokenizers``); with one or more, those
model folders (each a Hugging Face style folder). The model flags apply to every folder
given (as ``vllm serve``'s apply to its model), ``--served-model-name`` to a single one.
Every other setting comes from the environment (README, Configuration).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from derender.settings import ACCESS_LOG, Settings


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: PLC0415 - only the server needs it
    except ImportError:
        print("derender serve needs uvicorn: pip install 'derender[server]'", file=sys.stderr)
        return 2
    from derender.app.main import create_app  # noqa: PLC0415 - not for the other commands

    folders = tuple(Path(folder).resolve() for folder in args.model_dirs)
    if args.served_model_name and len(folders) != 1:
        print("--served-model-name needs exactly one MODEL_DIR", file=sys.stderr)
        return 2
    manifest: dict[str, Any] = {}
    if args.served_model_name:
        manifest["served_names"] = list(args.served_model_name)
    if args.reasoning_parser is not None:
        manifest["reasoning_parser"] = args.reasoning_parser or None
    if args.tool_call_parser is not None:
        manifest["tool_parser"] = args.tool_call_parser or None
    if args.max_model_len is not None:
        manifest["max_model_len"] = args.max_model_len
    env = dict(os.environ)
    if args.no_access_log:
        env[ACCESS_LOG] = "false"
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        settings = Settings.from_env(env)
        if folders:
            settings = replace(settings, model_folders=folders,
                               manifests={f.name: manifest for f in folders} if manifest else {})
        elif manifest:
            print("the model flags need MODEL_DIR arguments (or set them in each folder's "
                  "derender.json)", file=sys.stderr)
            return 2
        app = create_app(settings)
    except (ValueError, RuntimeError) as error:
        print(f"derender serve: {error}", file=sys.stderr)
        return 1
    uvicorn.run(app, host=args.host, port=args.port, access_log=False,
                log_level="info", log_config=None)
    return 0


def _replay(args: argparse.Namespace) -> int:
    from derender.awslambda.replay import main as replay  # noqa: PLC0415

    return replay([*args.args, *(["--body"] if args.body else [])])


def _compact(args: argparse.Namespace) -> int:
    from derender.compact import main as compact  # noqa: PLC0415

    return compact([args.src, args.dst])


def _keygen(args: argparse.Namespace) -> int:
    """A new key ring entry: 32 random bytes as 64 hex characters."""
    print(f"{args.id}:{secrets.token_hex(32)}")
    return 0


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="derender", description=__doc__.split("\n\n")[0])
    commands = main.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve both derender routes over HTTP")
    serve.add_argument("model_dirs", nargs="*", metavar="MODEL_DIR",
                       help="model folders to serve (default: those of DERENDER_MODELS_DIR)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--served-model-name", nargs="+", metavar="NAME",
                       help="the names the model answers to (one MODEL_DIR)")
    serve.add_argument("--reasoning-parser", metavar="NAME",
                       help="vLLM's reasoning parser name ('' for none)")
    serve.add_argument("--tool-call-parser", metavar="NAME",
                       help="vLLM's tool-call parser name ('' for none)")
    serve.add_argument("--max-model-len", type=int, metavar="N")
    serve.add_argument("--no-access-log", action="store_true",
                       help="no JSON line per request (DERENDER_ACCESS_LOG=false)")
    serve.set_defaults(run=_serve)
    replay = commands.add_parser("replay", help="run a Lambda event through its handler")
    replay.add_argument("args", nargs="+", metavar="[FUNCTION] EVENT_FILE")
    replay.add_argument("--body", action="store_true", help="also print the decoded body")
    replay.set_defaults(run=_replay)
    compact = commands.add_parser("compact", help="decode-only copies of model folders")
    compact.add_argument("src")
    compact.add_argument("dst")
    compact.set_defaults(run=_compact)
    keygen = commands.add_parser("keygen", help="print a new DERENDER_SIGNING_KEYS entry")
    keygen.add_argument("--id", default="k1", help="the key id (default k1)")
    keygen.set_defaults(run=_keygen)
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
