"""Model folders from S3: ``DERENDER_MODELS_S3_URI=s3://bucket/prefix/``.

Every object under the prefix whose key is ``<prefix><model folder>/<file>`` is downloaded
to ``DERENDER_MODELS_CACHE_DIR`` (``/tmp/derender-models``) before the registry is built;
the registry then reads that local folder exactly as it reads the tokenizer layer. The
download happens once per container: a marker file records which URI the folder holds, so
a second app in the same container (or a restarted process on a warm disk) reuses it.
Objects directly under the prefix, "folder" placeholder keys and keys with ``..`` parts are
skipped.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path, PurePosixPath

from derender.aws.keys import boto3_client

log = logging.getLogger("derender")

MARKER = ".derender-s3-source"
"""File in the cache folder naming the URI its models came from, written last."""


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` → (bucket, ``prefix/``); the prefix may be empty."""
    if not uri.startswith("s3://"):
        raise ValueError(f"an S3 models URI must look like s3://bucket/prefix/, got {uri!r}")
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    if not bucket:
        raise ValueError(f"an S3 models URI must name a bucket, got {uri!r}")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


def _relative_path(key: str, prefix: str) -> PurePosixPath | None:
    """Where object ``key`` goes under the cache folder, or None to skip it."""
    rest = key[len(prefix):]
    if not rest or rest.endswith("/"):
        return None
    path = PurePosixPath(rest)
    if len(path.parts) < 2 or any(part in ("", ".", "..") for part in path.parts):
        return None
    return path


def download_models(uri: str, cache_dir: Path) -> Path:
    """The local models folder holding the model folders under ``uri`` (downloaded unless
    the folder already holds them)."""
    bucket, prefix = parse_s3_uri(uri)
    marker = cache_dir / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8") == uri:
        return cache_dir
    started = time.perf_counter()
    marker.unlink(missing_ok=True)  # a partial or different download: fetch again
    cache_dir.mkdir(parents=True, exist_ok=True)
    s3 = boto3_client("s3")
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            key = str(item["Key"])
            relative = _relative_path(key, prefix)
            if relative is None:
                continue
            target = cache_dir.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            s3.download_file(bucket, key, str(partial))
            partial.replace(target)
            count += 1
    if count == 0:
        log.warning("no model files under %s", uri)
    marker.write_text(uri, encoding="utf-8")
    log.info("downloaded %d model files from %s to %s in %.2f s", count, uri, cache_dir,
             time.perf_counter() - started)
    return cache_dir
