"""The HTTP edge in front of the transport: who the caller is, and what they may call.

`AuthMode` (the template's parameter, `MCP_TASKS_AUTH_MODE` here) decides:

- `NONE`: no authorizer; every caller is `anonymous` and shares every task.
- `JWT`, `IAM`: API Gateway verified the caller; the principal comes from
  `requestContext.authorizer`. A JWT's scopes are checked against the tool's (403); a JWT
  whose claims say it is no access token (a Cognito ID token) is refused (401).
- `OAUTH`: this function is an OAuth 2.1 protected resource. It serves its RFC 9728 metadata at
  `/.well-known/oauth-protected-resource` (and the form suffixed with the resource's path),
  answers a request without a valid bearer token with 401 and
  `WWW-Authenticate: Bearer resource_metadata="…"`, validates tokens itself (`edge.tokens`),
  and answers a token that lacks a tool's scopes with 403 `insufficient_scope`.

Why OAUTH validates in the function: API Gateway's JWT authorizer answers its own 401 with no
`WWW-Authenticate` header, and an HTTP API Lambda authorizer can only allow or deny (its
denial is a fixed 401/403 it cannot add headers to). MCP clients find the authorization server
only through that challenge, so the function must answer it.

Invariants:
- a request reaches the transport only with a principal: `anonymous` only in NONE mode;
- the `Authorization` header never travels past this module (no token passthrough);
- refusals say why in `error_description`, which is our text; the token is never logged;
- a tool's scopes are checked by the server, where every era's `tools/call` passes
  (`InlineRunner.run_call`, on the body's `params.name`: the tool that runs), against the
  scopes this module verified, which travel on the request (`HttpRequest.granted_scopes`;
  None in NONE and IAM mode, where no token grants any). Its refusal (`InsufficientScope`)
  comes back through the transport and is answered here, in either era, as 403 with the
  `insufficient_scope` challenge. (Headers are no guide: 2025-11-25 clients send no
  `Mcp-Method`, and `Mcp-Name` may be Base64-encoded.)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from mcp_tasks_aws.edge.apigw import (
    Unidentified,
    jwt_claims_of_authorizer,
    jwt_principal,
    request_from_event,
    scopes_of_authorizer,
)
from mcp_tasks_aws.edge.auth_settings import WELL_KNOWN, AuthSettings
from mcp_tasks_aws.protocol.errors import InsufficientScope
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse

__all__ = ["WELL_KNOWN", "AuthSettings", "Challenge", "Edge", "build_edge"]

logger = logging.getLogger(__name__)

_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *")


def _quoted(value: str) -> str:
    # A quoted-string of printable ASCII only: nothing a client sent can break the header.
    safe = "".join(c if " " <= c <= "~" else "?" for c in value)
    return '"' + safe.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Challenge:
    """A refusal of the request's credentials: 401 (or 403 for missing scopes)."""

    status: int
    error: str | None = None
    description: str = ""
    scopes: tuple[str, ...] = ()
    metadata_url: str | None = None

    def response(self) -> HttpResponse:
        params: list[str] = []
        if self.error:  # RFC 6750 section 3.1: no error details when no token was sent
            params.append(f"error={_quoted(self.error)}")
            if self.description:
                params.append(f"error_description={_quoted(self.description)}")
        if self.scopes:
            params.append(f"scope={_quoted(' '.join(self.scopes))}")
        if self.metadata_url:
            params.append(f"resource_metadata={_quoted(self.metadata_url)}")
        headers = {
            "content-type": "application/json",
            "www-authenticate": "Bearer" + (" " + ", ".join(params) if params else ""),
            "cache-control": "no-store",
        }
        body = {"error": self.error or "unauthorized", "error_description": self.description}
        return HttpResponse(self.status, headers, json.dumps(body).encode())


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer` header; "" for a malformed one, None if absent."""
    header = request.header("authorization")
    if header is None:
        return None
    match = _BEARER.fullmatch(header)
    return match.group(1) if match else ""


class Edge:
    """Turns an API Gateway event into the transport's request, enforcing `AuthMode`."""

    def __init__(
        self,
        settings: AuthSettings,
        serve: Callable[[HttpRequest], HttpResponse],
        *,
        all_scopes: Iterable[str] = (),
        verifier: Any = None,
    ) -> None:
        """`serve` answers an admitted request (the transport); `all_scopes` are the tools'
        scopes, advertised in the metadata; `verifier` checks OAUTH bearer tokens."""
        self.settings = settings
        self.serve = serve
        self.all_scopes = sorted({*settings.scopes, *all_scopes})
        self.verifier = verifier

    def after_restore(self) -> None:
        """After a SnapStart restore: the issuer's keys are fetched again when next needed."""
        if self.verifier is not None:
            self.verifier.keys.forget()

    def handle(self, event: dict[str, Any], lambda_context: Any = None) -> HttpResponse:
        if self.settings.mode == "oauth":
            path = _path_of(event)
            if path in self.settings.metadata_paths:
                return self.metadata_response(event)
        try:
            request = request_from_event(event, lambda_context)
        except Unidentified as exc:
            return Challenge(401, "invalid_token", exc.message).response()
        if self.settings.mode == "oauth":
            admitted = self.admit(request)
            if isinstance(admitted, Challenge):
                return admitted.response()
            request = admitted
        elif self.settings.mode == "jwt":
            refused = not_an_access_token(event)
            if refused is not None:
                return refused.response()
            # No JWT authorizer on the event grants nothing (never "not enforced").
            granted = scopes_of_authorizer(event) or frozenset()
            request = replace(request, granted_scopes=granted)
        try:
            return self.serve(request)
        except InsufficientScope as refused:
            return self.scope_challenge(refused).response()

    # -- OAUTH --------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 protected-resource metadata document."""
        document: dict[str, Any] = {
            "resource": self.settings.resource,
            "authorization_servers": list(self.settings.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.all_scopes:
            document["scopes_supported"] = self.all_scopes
        return document

    def metadata_response(self, event: dict[str, Any]) -> HttpResponse:
        method = ((event.get("requestContext") or {}).get("http") or {}).get("method", "GET")
        if method.upper() not in ("GET", "HEAD"):
            return HttpResponse(405, {"allow": "GET", "content-type": "text/plain"}, b"use GET")
        headers = {
            "content-type": "application/json",
            "cache-control": "max-age=300",
            # A public document: browser-based clients (the Inspector) read it cross-origin.
            "access-control-allow-origin": "*",
        }
        return HttpResponse(200, headers, json.dumps(self.metadata()).encode())

    def challenge(
        self, error: str | None = None, description: str = "", status: int = 401
    ) -> Challenge:
        """A refusal naming this endpoint's scopes and where its metadata is."""
        return Challenge(
            status,
            error,
            description,
            scopes=self.settings.scopes,
            metadata_url=self.settings.metadata_url,
        )

    def admit(self, request: HttpRequest) -> Challenge | HttpRequest:
        """The request with its principal and granted scopes, and without its token."""
        from mcp_tasks_aws.edge.jwks import KeysUnavailable
        from mcp_tasks_aws.edge.tokens import TokenRefused

        token = bearer_token(request)
        if token is None:
            return self.challenge(description="Sign in: this endpoint needs a bearer token")
        if not token:
            return self.challenge(
                "invalid_request", "the Authorization header is malformed (use: Bearer <token>)"
            )
        try:
            verified = self.verifier.verify(token)
        except TokenRefused as exc:
            logger.info("bearer token refused: %s", exc)
            return self.challenge("invalid_token", str(exc))
        except KeysUnavailable as exc:
            logger.warning("cannot check bearer tokens: %s", exc)
            return Challenge(503, "temporarily_unavailable", "cannot check tokens right now")
        if not set(self.settings.scopes) <= verified.scopes:
            return self.challenge(
                "insufficient_scope", "the token lacks the scopes this endpoint needs", 403
            )
        headers = {k: v for k, v in request.headers.items() if k != "authorization"}
        principal = jwt_principal(verified.issuer, verified.subject, verified.client)
        return replace(
            request, headers=headers, principal=principal, granted_scopes=verified.scopes
        )

    # -- scopes per tool ----------------------------------------------------------------------

    def scope_challenge(self, refused: InsufficientScope) -> Challenge:
        """The 403 for a tool call whose token lacks the tool's scopes: the scopes to ask for
        are this endpoint's and the tool's (RFC 6750 section 3.1)."""
        wanted = tuple(sorted({*self.settings.scopes, *refused.needed}))
        oauth = self.settings.mode == "oauth"
        return Challenge(
            403,
            "insufficient_scope",
            f"the tool {refused.tool!r} needs the scope(s): {' '.join(sorted(refused.missing))}",
            scopes=wanted,
            metadata_url=self.settings.metadata_url if oauth else None,
        )


def not_an_access_token(event: dict[str, Any]) -> Challenge | None:
    """AuthMode JWT: refuse a token API Gateway let through that is not an access token.

    API Gateway's JWT authorizer takes a Cognito ID token whose `aud` (the app client's id) is
    a listed audience; its claims still say `token_use: id` (see `tokens.token_use_problem`).
    """
    from mcp_tasks_aws.edge.tokens import token_use_problem

    claims = jwt_claims_of_authorizer(event)
    if claims is None:
        return None
    problem = token_use_problem(claims, str(claims.get("iss", "")))
    return Challenge(401, "invalid_token", problem) if problem is not None else None


def _path_of(event: dict[str, Any]) -> str:
    path = event.get("rawPath") or ((event.get("requestContext") or {}).get("http") or {}).get(
        "path"
    )
    return str(path or "/")


def build_edge(
    auth: AuthSettings,
    serve: Callable[[HttpRequest], HttpResponse],
    tool_scopes: Iterable[str] = (),
) -> Edge:
    """The edge for these settings; `tool_scopes` are the scopes the tools need (the server
    checks them per call; the edge advertises them).

    Building it fetches nothing: in OAUTH mode the issuer's keys are fetched on the first token
    check, and `cryptography` is imported then too.
    """
    auth.check()
    verifier = None
    if auth.mode == "oauth":
        from mcp_tasks_aws.edge.jwks import JwksCache
        from mcp_tasks_aws.edge.tokens import TokenVerifier

        keys = JwksCache(
            issuer=auth.issuer,
            jwks_uri=auth.jwks_uri,
            min_refresh_seconds=auth.jwks_refresh_seconds,
        )
        verifier = TokenVerifier(issuer=auth.issuer, audiences=auth.audiences, keys=keys)
    return Edge(auth, serve, all_scopes=tool_scopes, verifier=verifier)
