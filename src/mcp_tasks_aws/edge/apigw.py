"""API Gateway HTTP API (payload format 2.0) events to `HttpRequest`, and back.

The caller's principal comes only from what API Gateway's authorizer put in
`requestContext.authorizer` (JWT claims, IAM caller, or a Lambda authorizer's context). A raw
`Authorization` header is never read here: API Gateway has already verified it, or the
protected-resource gate (`edge.gate`, AuthMode OAUTH) verifies it and sets the principal.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any, Protocol

from mcp_tasks_aws.protocol.errors import InvalidRequest
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse

ANONYMOUS = "anonymous"
RESPONSE_MARGIN_S = 1.5
"""Time kept, before the function's own timeout, to send an inline call's answer."""


class Unidentified(InvalidRequest):
    """An authorizer vouched for the request but named no caller: refused, never anonymous."""

    http_status = 401


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace("|", "%7C")


def encode_principal(kind: str, *parts: str) -> str:
    """`kind:` then the parts joined by `|`, each with `%` and `|` escaped.

    Escaping makes the encoding injective: `sub="auth0|alice", client="app1"` and
    `sub="auth0", client="alice|app1"` give different principals. Parts without `%` or `|`
    (the usual case) read as they did before escaping existed, so stored tasks keep their owner.
    """
    return f"{kind}:" + "|".join(_escape(part) for part in parts)


def jwt_principal(issuer: str, subject: str, client: str) -> str:
    """The principal of a verified JWT's issuer, subject and client (`client_id`, else `azp`).

    The same token identity gives the same principal whether API Gateway's JWT authorizer or
    this function verified the token, so switching `AuthMode` between JWT and OAUTH keeps tasks.
    """
    return encode_principal("jwt", issuer, subject, client)


def principal_of(event: dict[str, Any]) -> str:
    """A stable, unambiguous string naming the authenticated caller.

    JWT: issuer, subject and client, so one user's tasks made through two OAuth clients stay
    apart. IAM: the account and the caller's ARN. Lambda authorizer: its `principalId` (or
    `sub`). `anonymous` only when there is no authorizer at all; an authorizer that names no
    caller (a JWT without `sub`, say) raises `Unidentified`, so such a request can never share
    the tasks of unauthenticated callers.
    """
    authorizer = (event.get("requestContext") or {}).get("authorizer")
    if not authorizer:
        return ANONYMOUS
    if isinstance(authorizer, dict):
        jwt = authorizer.get("jwt")
        if isinstance(jwt, dict):
            claims = jwt.get("claims") or {}
            subject = claims.get("sub") if isinstance(claims, dict) else None
            if isinstance(subject, str) and subject:
                client = claims.get("client_id") or claims.get("azp") or ""
                return jwt_principal(str(claims.get("iss", "")), subject, str(client))
        iam = authorizer.get("iam")
        if isinstance(iam, dict):
            arn = iam.get("userArn") or iam.get("callerId")
            if arn:
                return encode_principal("iam", str(iam.get("accountId", "")), str(arn))
        custom = authorizer.get("lambda")
        if isinstance(custom, dict):
            subject = custom.get("principalId") or custom.get("sub")
            if subject:
                return encode_principal("lambda", str(subject))
    raise Unidentified("Unauthorized: the authorizer names no caller")


def jwt_claims_of_authorizer(event: dict[str, Any]) -> dict[str, Any] | None:
    """The claims API Gateway's JWT authorizer passed on (every value a string), or None."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    jwt = authorizer.get("jwt") if isinstance(authorizer, dict) else None
    claims = jwt.get("claims") if isinstance(jwt, dict) else None
    return claims if isinstance(claims, dict) else None


def scopes_of_authorizer(event: dict[str, Any]) -> frozenset[str] | None:
    """Scopes API Gateway's JWT authorizer saw on the token, or None without a JWT authorizer."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    jwt = authorizer.get("jwt") if isinstance(authorizer, dict) else None
    if not isinstance(jwt, dict):
        return None
    scopes = jwt.get("scopes")
    if isinstance(scopes, list):
        return frozenset(str(scope) for scope in scopes)
    claims = jwt.get("claims") or {}
    value = claims.get("scope", claims.get("scp")) if isinstance(claims, dict) else None
    if not isinstance(value, str):
        return frozenset()
    # API Gateway passes every claim as a string: a list claim arrives as `[a b]` (or as JSON
    # from the embedded stack's emulator).
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value.strip("[]")
    if isinstance(parsed, list):
        return frozenset(str(item) for item in parsed)
    return frozenset(str(parsed).split())


def request_from_event(event: dict[str, Any], lambda_context: Any = None) -> HttpRequest:
    """Build the transport's request from a payload-v2 event (and the Lambda context, whose
    time left sets the request's deadline)."""
    request_context = event.get("requestContext") or {}
    http = request_context.get("http") or {}
    method = http.get("method") or event.get("httpMethod") or "GET"
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    raw = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest("Invalid base64 body") from exc
    else:
        body = raw.encode()
    deadline = None
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    if remaining is not None:
        deadline = time.monotonic() + remaining() / 1000 - RESPONSE_MARGIN_S
    return HttpRequest(
        method=method,
        headers=headers,
        body=body,
        principal=principal_of(event),
        deadline=deadline,
        # An invoker that streams offers a sink on the context (see ResponseStream).
        streaming=getattr(lambda_context, "response_stream", None) is not None,
    )


class ResponseStream(Protocol):
    """A sink an invoker may offer on the Lambda context to receive a response as it is made.

    Python Lambda functions behind API Gateway cannot stream, so deployed there is none and
    streamed responses are buffered; the embedded stack's invoker offers one.
    """

    def begin(self, status: int, headers: dict[str, str]) -> None: ...

    def write(self, chunk: bytes) -> None: ...


def response_to_api(response: HttpResponse, context: Any = None) -> dict[str, Any]:
    """The payload-v2 response API Gateway expects (text bodies, never base64 here)."""
    sink: ResponseStream | None = getattr(context, "response_stream", None)
    if response.stream is not None and sink is not None:
        sink.begin(response.status, response.headers)
        for chunk in response.stream:
            sink.write(chunk)
        return {
            "statusCode": response.status,
            "headers": response.headers,
            "body": "",
            "isBase64Encoded": False,
            "streamed": True,
        }
    return {
        "statusCode": response.status,
        "headers": response.headers,
        "body": response.read_all().decode(),
        "isBase64Encoded": False,
    }
