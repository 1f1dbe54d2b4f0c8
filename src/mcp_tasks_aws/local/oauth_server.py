"""A small OAuth 2.1 authorization server for the embedded stack (`make run AUTH=oauth`).

Built on Authlib (grants, PKCE, dynamic client registration, RFC 9068 JWT access tokens,
RFC 9207 `iss` in the authorization response) and Flask, served by Werkzeug on 127.0.0.1.
Everything lives in memory and ends with the process. Not for production: anyone at the
keyboard signs in as whoever they type (there are no passwords); the point is that the
whole MCP sign-in (discovery, registration, authorization code + PKCE, refresh) runs on one
machine against the real API handler.

Invariants:
- one protected resource: access tokens carry `aud` = the embedded stack's MCP URL, and a
  `resource` parameter (RFC 8707) naming anything else is refused (`invalid_target`);
- PKCE with S256 is required; public clients (`token_endpoint_auth_method: none`) and
  client secrets (basic or post) are both accepted;
- loopback redirect URIs match on any port (RFC 8252 section 7.3); others match exactly;
- refresh tokens rotate: each is good once;
- the signing key is an RSA key made at start-up with joserfc; its public half is the JWKS.
"""

from __future__ import annotations

import html
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, TokenMixin, grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from authlib.oauth2.rfc9207 import IssuerParameter
from flask import Flask, jsonify, request
from joserfc.jwk import KeySet, RSAKey
from werkzeug.serving import make_server

from mcp_tasks_aws.edge.jwks import is_loopback_url

ACCESS_TOKEN_SECONDS = 3600
CODE_SECONDS = 300
DEFAULT_SCOPES = ("mcp",)


class RequiredPkce(CodeChallenge):  # type: ignore[misc]
    """OAuth 2.1: every authorization request carries an S256 code challenge (Authlib's own
    `required` only holds for public clients, and only at the token endpoint)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256)")
        if data.get("code_challenge_method", "plain") != "S256":
            raise InvalidRequestError("PKCE must use code_challenge_method=S256")
        super().validate_code_challenge(grant, redirect_uri)


class InvalidTarget(OAuth2Error):  # type: ignore[misc]
    """RFC 8707: the requested resource is not one this server issues tokens for."""

    error = "invalid_target"


@dataclass
class User:
    name: str

    def get_user_id(self) -> str:
        return self.name


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    token_endpoint_auth_method: str
    grant_types: list[str]
    scope: str
    client_name: str = ""

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return self.scope
        allowed = set(self.scope.split())
        return " ".join(s for s in scope.split() if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        if redirect_uri in self.redirect_uris:
            return True
        # RFC 8252 section 7.3: a native app's loopback redirect may use any port.
        asked = urlsplit(redirect_uri)
        if asked.scheme != "http" or not is_loopback_url(redirect_uri):
            return False
        for registered in map(urlsplit, self.redirect_uris):
            if (registered.scheme, registered.hostname, registered.path) == (
                "http",
                asked.hostname,
                asked.path,
            ):
                return True
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(
            self.client_secret, client_secret
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint != "token" or method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class AuthorizationCode(AuthorizationCodeMixin):  # type: ignore[misc]
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: User
    code_challenge: str
    code_challenge_method: str
    issued_at: float = field(default_factory=time.time)

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def is_expired(self) -> bool:
        return time.time() > self.issued_at + CODE_SECONDS


@dataclass
class RefreshToken(TokenMixin):  # type: ignore[misc]
    token: str
    client_id: str
    scope: str
    user: User
    revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return bool(client.client_id == self.client_id)

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return self.revoked


@dataclass
class _Memory:
    """Everything the server remembers, behind one lock (Werkzeug serves threads)."""

    clients: dict[str, Client] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    refresh_tokens: dict[str, RefreshToken] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class LocalAuthorizationServer:
    """The server, its keys and its state; `start()` serves it, `stop()` ends it."""

    def __init__(
        self,
        resource: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
    ) -> None:
        self.resource = resource
        self.scopes = scopes
        self.memory = _Memory()
        self.key = RSAKey.generate_key(
            2048, parameters={"kid": secrets.token_hex(8), "use": "sig", "alg": "RS256"}
        )
        self.app = Flask("mcp_tasks_aws.local.oauth_server")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        self._server = make_server(host, port, self.app, threaded=True)
        self.issuer = f"http://{host}:{self._server.server_port}"
        self.authorization = self._authorization_server()
        self._routes()
        self._thread: threading.Thread | None = None

    # -- life -----------------------------------------------------------------------------------

    def start(self) -> LocalAuthorizationServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    @property
    def jwks(self) -> dict[str, Any]:
        public = KeySet([self.key]).as_dict(private=False)
        return dict(public)

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "jwks_uri": f"{self.issuer}/jwks",
            "scopes_supported": list(self.scopes),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "authorization_response_iss_parameter_supported": True,
        }

    def register_client(
        self,
        redirect_uris: list[str],
        *,
        client_secret: str | None = None,
        name: str = "",
    ) -> Client:
        """Pre-register a client (what an operator does in a provider's console)."""
        client = Client(
            client_id=secrets.token_urlsafe(16),
            client_secret=client_secret,
            redirect_uris=redirect_uris,
            token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(self.scopes),
            client_name=name,
        )
        with self.memory.lock:
            self.memory.clients[client.client_id] = client
        return client

    # -- Authlib wiring ---------------------------------------------------------------------------

    def _authorization_server(self) -> AuthorizationServer:
        owner = self
        memory = self.memory

        def query_client(client_id: str) -> Client | None:
            with memory.lock:
                return memory.clients.get(client_id)

        def save_token(token: dict[str, Any], oauth_request: Any) -> None:
            refresh = token.get("refresh_token")
            if refresh:
                record = RefreshToken(
                    refresh,
                    oauth_request.client.client_id,
                    token.get("scope", ""),
                    oauth_request.user,
                )
                with memory.lock:
                    memory.refresh_tokens[refresh] = record

        class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

            def save_authorization_code(self, code: str, oauth_request: Any) -> None:
                owner.check_resource()
                record = AuthorizationCode(
                    code=code,
                    client_id=oauth_request.client.client_id,
                    redirect_uri=oauth_request.payload.redirect_uri,
                    scope=oauth_request.scope or "",
                    user=oauth_request.user,
                    code_challenge=oauth_request.payload.data.get("code_challenge"),
                    code_challenge_method=oauth_request.payload.data.get("code_challenge_method"),
                )
                with memory.lock:
                    memory.codes[code] = record

            def query_authorization_code(
                self, code: str, client: Client
            ) -> AuthorizationCode | None:
                with memory.lock:
                    record = memory.codes.get(code)
                if record and record.client_id == client.client_id and not record.is_expired():
                    return record
                return None

            def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
                with memory.lock:
                    memory.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: AuthorizationCode) -> User:
                return authorization_code.user

        class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
            INCLUDE_NEW_REFRESH_TOKEN = True

            def authenticate_refresh_token(self, refresh_token: str) -> RefreshToken | None:
                with memory.lock:
                    record = memory.refresh_tokens.get(refresh_token)
                return record if record and not record.revoked else None

            def authenticate_user(self, refresh_token: RefreshToken) -> User:
                return refresh_token.user

            def revoke_old_credential(self, refresh_token: RefreshToken) -> None:
                with memory.lock:
                    refresh_token.revoked = True

        class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
            def authenticate_token(self, oauth_request: Any) -> bool:
                return True  # open registration (RFC 7591): any local client may register

            def resolve_public_key(self, oauth_request: Any) -> None:
                return None

            def generate_client_secret(self, oauth_request: Any) -> str | None:
                # A public client (a CLI, an IDE) asks for no secret and gets none.
                method = oauth_request.payload.data.get("token_endpoint_auth_method")
                return None if method == "none" else secrets.token_urlsafe(32)

            def get_server_metadata(self) -> dict[str, Any]:
                return owner.metadata()

            def save_client(
                self, client_info: dict[str, Any], client_metadata: dict[str, Any], _: Any
            ) -> Client:
                method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
                client = Client(
                    client_id=client_info["client_id"],
                    client_secret=None if method == "none" else client_info["client_secret"],
                    redirect_uris=list(client_metadata.get("redirect_uris") or []),
                    token_endpoint_auth_method=method,
                    grant_types=list(
                        client_metadata.get("grant_types")
                        or ["authorization_code", "refresh_token"]
                    ),
                    scope=" ".join(owner.scopes),
                    client_name=str(client_metadata.get("client_name", "")),
                )
                with memory.lock:
                    memory.clients[client.client_id] = client
                return client

        class AccessTokens(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> KeySet:
                return KeySet([owner.key])

            def get_audiences(self, client: Client, user: User | None, scope: str) -> str:
                owner.check_resource()
                return owner.resource

        class Issuer(IssuerParameter):  # type: ignore[misc]
            def get_issuer(self) -> str:
                return owner.issuer

        server = AuthorizationServer(self.app, query_client=query_client, save_token=save_token)
        server.scopes_supported = list(self.scopes)
        server.register_grant(CodeGrant, [RequiredPkce(required=True)])
        server.register_grant(RefreshGrant)
        server.register_endpoint(Registration)
        server.register_extension(Issuer())
        server.register_token_generator(
            "default",
            AccessTokens(
                self.issuer,
                alg="RS256",
                refresh_token_generator=_opaque_token,
                expires_generator=lambda client, grant_type: ACCESS_TOKEN_SECONDS,
            ),
        )
        return server

    def check_resource(self) -> None:
        """RFC 8707: a `resource` parameter, when given, must name the embedded stack."""
        asked = request.values.getlist("resource")
        if any(value.rstrip("/") != self.resource.rstrip("/") for value in asked):
            raise InvalidTarget(description=f"this server only issues tokens for {self.resource}")

    # -- HTTP -------------------------------------------------------------------------------------

    def _routes(self) -> None:
        app, server = self.app, self.authorization

        @app.get("/.well-known/oauth-authorization-server")
        @app.get("/.well-known/openid-configuration")
        def metadata() -> Any:
            return jsonify(self.metadata())

        @app.get("/jwks")
        def jwks() -> Any:
            return jsonify(self.jwks)

        @app.post("/register")
        def register() -> Any:
            return server.create_endpoint_response("client_registration")

        @app.post("/token")
        def token() -> Any:
            try:
                self.check_resource()
            except InvalidTarget as exc:
                return server.handle_error_response(request, exc)
            return server.create_token_response()

        @app.get("/authorize")
        def authorize_form() -> Any:
            try:
                self.check_resource()
                grant = server.get_consent_grant(end_user=None)
            except OAuth2Error as exc:
                return _page(f"Cannot sign in: {exc.error} ({exc.description or ''})"), 400
            client = grant.client
            return _sign_in_form(request.query_string.decode(), client.client_name, grant)

        @app.post("/authorize")
        def authorize() -> Any:
            name = (request.form.get("username") or "").strip()
            allowed = request.form.get("decision") == "allow"
            if allowed and not name:
                raise InvalidRequestError("a user name is needed")
            user = User(name) if allowed else None
            try:
                grant = server.get_consent_grant(end_user=user)
            except OAuth2Error as exc:
                return _page(f"Cannot sign in: {exc.error} ({exc.description or ''})"), 400
            return server.create_authorization_response(grant_user=user, grant=grant)


def _opaque_token(*_: Any, **__: Any) -> str:
    return secrets.token_urlsafe(32)


def _page(body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>mcp-tasks-aws sign-in</title>"
        "</head><body style='font-family:sans-serif;max-width:32em;margin:3em auto'>"
        f"{body}</body></html>"
    )


def _sign_in_form(query: str, client_name: str, grant: Any) -> str:
    scope = grant.request.scope or ""
    who = html.escape(client_name or grant.client.client_id)
    return _page(
        "<h1>Sign in to the local MCP server</h1>"
        f"<p><b>{who}</b> asks for access"
        + (f" with the scopes <code>{html.escape(scope)}</code>" if scope else "")
        + ".</p>"
        "<p>This is the embedded stack's development server: any name signs in.</p>"
        f"<form method='post' action='/authorize?{html.escape(query)}'>"
        "<label>User name <input name='username' value='alice' autofocus></label> "
        "<button name='decision' value='allow'>Sign in</button> "
        "<button name='decision' value='deny'>Deny</button>"
        "</form>"
    )
