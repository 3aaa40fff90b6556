"""The Lambda entry: Mangum around the app, and a 400 for events Mangum cannot read.

Mangum decodes the event before the app sees anything; a body that is not valid base64, a
text body that is not valid UTF-8, or ``"headers": null`` make it raise, which API Gateway
would turn into a bare 500/502. Those are bad requests, so they get vLLM's envelope here.

Every invocation writes one JSON line to stdout (``derender.awslambda.telemetry``): the request id,
route, status, latency, cold start and CloudWatch EMF metrics.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from fastapi import FastAPI
from mangum import Mangum

from derender.app.main import create_app
from derender.app.observability import forget_facts, last_facts
from derender.aws.keys import preload_boto3
from derender.awslambda.snapstart import on_restore, renew_randomness
from derender.awslambda.telemetry import (
    completion_tokens,
    event_method,
    event_path,
    invocation_record,
    log_line,
)
from derender.contract.errors import ErrorType, envelope
from derender.settings import Settings

log = logging.getLogger("derender")

PREPAID_INITS = frozenset({"snap-start", "provisioned-concurrency"})
"""``AWS_LAMBDA_INITIALIZATION_TYPE`` values of inits that run before any request arrives (a
SnapStart snapshot, a provisioned container): work done there costs no caller anything."""

LambdaEvent = dict[str, Any]
LambdaResponse = dict[str, Any]


def _normalize(event: LambdaEvent) -> LambdaEvent:
    """Fill the optional maps API Gateway may send as null."""
    fixed = dict(event)
    for key in ("headers", "multiValueHeaders", "queryStringParameters",
                "multiValueQueryStringParameters"):
        if key in fixed and fixed[key] is None:
            fixed[key] = {}
    return fixed


def _bad_event(reason: str) -> LambdaResponse:
    error = ErrorType.SCHEMA
    body = json.dumps(envelope(error, f"The request could not be read: {reason}"),
                      separators=(",", ":"))
    return {"statusCode": error.status, "headers": {"content-type": "application/json"},
            "multiValueHeaders": {}, "body": body, "isBase64Encoded": False}


class LambdaHandler:
    """``handler(event, context)`` for API Gateway (REST 1.0, HTTP 2.0) and Function URLs."""

    def __init__(self, app: FastAPI | None = None, warm: bool = True) -> None:
        self.app = app or create_app()
        if warm:  # load the default model during init, not on the first request
            self.app.state.registry.get(None)
            settings = Settings.from_env()
            if (os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in PREPAID_INITS
                    and (settings.signing_keys_ssm_parameter or settings.signing_keys_secret)):
                preload_boto3()  # not the keys: they are read (and re-read) on use
        self._mangum = Mangum(self.app, lifespan="off")
        self._cold = True
        """True until the first invocation of this handler (one per container) starts."""
        on_restore(self.after_restore)

    def after_restore(self) -> None:
        """A container restored from a SnapStart snapshot: renew what the init captured
        (``derender.awslambda.snapstart``), and count its first invocation as a cold start."""
        renew_randomness()
        self.app.state.key_provider.renew()
        self._cold = True
        log.info("restored from a SnapStart snapshot: randomness, signing-key cache and AWS "
                 "connections renewed")

    def __call__(self, event: LambdaEvent, context: Any) -> LambdaResponse:
        started = time.perf_counter()
        cold_start, self._cold = self._cold, False
        status = 500
        response: LambdaResponse | None = None
        try:
            response = self._invoke(event, context)
            status = int(response.get("statusCode", 500))
            return response
        finally:  # an escaping exception is logged as a 500, then re-raised
            latency_ms = (time.perf_counter() - started) * 1000.0
            facts = last_facts() if response is not None else None
            record = invocation_record(
                aws_request_id=getattr(context, "aws_request_id", None),
                path=event_path(event), method=event_method(event), status=status,
                latency_ms=latency_ms, cold_start=cold_start,
                tokens=completion_tokens(response) if response is not None else 0,
                timestamp_ms=int(time.time() * 1000),
                model=None if facts is None else facts.model,
                stream=facts is not None and facts.stream,
                chunks=0 if facts is None else facts.chunks,
                refusal=None if facts is None else facts.refusal)
            sys.stdout.write(log_line(record) + "\n")
            sys.stdout.flush()

    def _invoke(self, event: LambdaEvent, context: Any) -> LambdaResponse:
        forget_facts()
        if not isinstance(event, dict):
            return _bad_event("the event is not a JSON object")
        try:
            response: LambdaResponse = self._mangum(_normalize(event), context)
        except UnicodeError:
            return _bad_event("the body is not valid UTF-8")
        except ValueError as exc:  # binascii.Error: a base64 body that does not decode
            log.warning("unreadable Lambda event: %s", exc)
            return _bad_event("the body is not valid base64")
        except (AttributeError, KeyError, TypeError, RuntimeError) as exc:
            log.warning("unreadable Lambda event: %r", exc)
            return _bad_event("the event is not an API Gateway or Function URL request")
        return response
