"""Who is calling: the principal API Gateway or a Lambda Function URL authenticated.

A stream state is bound to the caller that started the stream (``derender.core.streaming``
puts the caller into the stream's fingerprint), so a token that leaks from one caller is
refused for another with the same 400 as a token of another stream.

The caller comes only from what AWS wrote into the event after checking the request, never
from a header the client chose:

- IAM (an HTTP API route with ``AWS_IAM`` authorization, or a Function URL with auth type
  ``AWS_IAM``): ``requestContext.authorizer.iam``. The principal is its ``userArn`` (for an
  assumed role ``arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION``), else the account and
  user id. The access key is not part of it: temporary credentials change while a stream
  goes on.
- JWT (an HTTP API JWT authorizer): ``requestContext.authorizer.jwt.claims``: the issuer
  with the subject (``sub``), else the OAuth client id (``client_id``, then ``azp``).

Anything else (the local server, ``AuthMode`` none, a REST API event) has no caller: the
state is bound as before, to the stream alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_JWT_IDS = ("sub", "client_id", "azp")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _iam_caller(iam: Mapping[str, Any]) -> str | None:
    arn = _text(iam.get("userArn"))
    if arn is not None:
        return f"iam:{arn}"
    account = _text(iam.get("accountId"))
    user = _text(iam.get("userId")) or _text(iam.get("callerId"))
    if account is None and user is None:
        return None
    return f"iam:{account or ''}:{user or ''}"


def _jwt_caller(jwt: Mapping[str, Any]) -> str | None:
    claims = jwt.get("claims")
    if not isinstance(claims, Mapping):
        return None
    for name in _JWT_IDS:
        subject = claims.get(name)
        if isinstance(subject, (str, int)) and not isinstance(subject, bool) and subject != "":
            return f"jwt:{claims.get('iss') or ''} {name}={subject}"
    return None


def caller_of(event: object) -> str | None:
    """The authenticated caller of a Lambda event (payload 2.0 or Function URL), or None."""
    if not isinstance(event, Mapping):
        return None
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    if not isinstance(authorizer, Mapping):
        return None
    iam = authorizer.get("iam")
    if isinstance(iam, Mapping):
        return _iam_caller(iam)
    jwt = authorizer.get("jwt")
    if isinstance(jwt, Mapping):
        return _jwt_caller(jwt)
    return None
