"""Signing in to an OAuth-protected MCP server from the terminal, through the official SDK.

The SDK's `OAuthClientProvider` does the protocol: protected-resource and authorization-server
discovery, dynamic client registration (or a pre-registered client id, or a client metadata
document URL), authorization code with PKCE, scope step-up, refresh. This module gives it what
a terminal client needs around that:

- `TokenCache`: tokens and the client registration, one file per server under the user's
  config directory (`$MCP_TASKS_CONFIG_DIR`, else `$XDG_CONFIG_HOME/mcp-tasks`, else
  `~/.config/mcp-tasks`; `%APPDATA%\\mcp-tasks` on Windows), readable by the user only;
- `LoopbackCallback`: the redirect target, a one-shot HTTP server on 127.0.0.1 (RFC 8252)
  that waits for the authorization response;
- `open_browser`: the authorization URL goes to the system browser (`$BROWSER` picks which),
  and is printed so it can be opened by hand.

Invariants:
- tokens are written atomically with mode 0600 and never printed or logged;
- a cached access token past its expiry is refreshed before use (the expiry is stored with it,
  so this also holds in a later process), and a failed refresh falls back to signing in again;
- the callback server accepts one authorization response, for the `state` the SDK sent, and
  stops.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError


class SignInNeeded(OAuthFlowError):
    """The server wants a sign-in that this command may not start (`--json` never prompts)."""


SIGN_IN_ERRORS = (OAuthFlowError, OAuthTokenError, OAuthRegistrationError)
"""What a failed sign-in raises (the CLI reports them as one line, exit code 3)."""

__all__ = [
    "CALLBACK_PORT",
    "SIGN_IN_ERRORS",
    "LoopbackCallback",
    "SignInNeeded",
    "TokenCache",
    "add_sign_in_arguments",
    "auth_for",
    "config_dir",
    "oauth_provider",
    "open_browser",
    "sign_in_defaults",
]

CALLBACK_PORT = 33418
"""The default loopback port of the redirect URI `http://localhost:33418/callback` (register
it with your provider for a pre-registered client; `--callback-port` changes it)."""
CALLBACK_PATH = "/callback"
SIGN_IN_TIMEOUT_S = 300.0
_EXPIRY_MARGIN_S = 30.0


def config_dir(env: dict[str, str] | None = None) -> Path:
    """Where `mcp-tasks` keeps its state (see the module docstring)."""
    env = dict(os.environ if env is None else env)
    if env.get("MCP_TASKS_CONFIG_DIR"):
        return Path(env["MCP_TASKS_CONFIG_DIR"])
    if os.name == "nt" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "mcp-tasks"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcp-tasks"


class TokenCache:
    """The SDK's `TokenStorage` for one server, kept in one JSON file."""

    def __init__(self, server_url: str, directory: Path | None = None) -> None:
        self.server_url = server_url
        digest = hashlib.sha256(server_url.encode()).hexdigest()[:32]
        self.path = (directory or config_dir()) / "tokens" / f"{digest}.json"
        self._context: OAuthContext | None = None

    def attach(self, context: OAuthContext) -> None:
        """Keep what the SDK discovered with the tokens, and give it back to a later process.

        The SDK discovers the authorization server only on a 401, so a new process holding an
        expired token would send its refresh to a guessed `/token` on the MCP server's origin.
        With the discovered metadata restored, the refresh goes to the real token endpoint.
        """
        self._context = context
        saved = self._read().get("discovered") or {}
        try:
            if saved.get("authorization_server"):
                context.oauth_metadata = OAuthMetadata.model_validate(saved["authorization_server"])
            if saved.get("resource"):
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    saved["resource"]
                )
        except ValidationError:
            return  # stale or foreign: the SDK discovers again on the next 401
        context.auth_server_url = saved.get("authorization_server_url") or None

    # the file

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("server") == self.server_url else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {**data, "server": self.server_url}
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")
        try:
            os.chmod(temporary, 0o600)
            with os.fdopen(fd, "w") as handle:
                json.dump(data, handle)
            os.replace(temporary, self.path)  # readers see the old file or the new, never half
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def forget(self) -> bool:
        """Drop this server's tokens and registration; whether there were any."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def expires_at(self) -> float | None:
        """When the cached access token expires (epoch seconds), if known."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    # TokenStorage

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        context = self._context
        if context is not None and context.oauth_metadata is not None:
            resource = context.protected_resource_metadata
            data["discovered"] = {
                "authorization_server": context.oauth_metadata.model_dump(
                    mode="json", exclude_none=True
                ),
                "resource": resource.model_dump(mode="json", exclude_none=True)
                if resource
                else None,
                "authorization_server_url": context.auth_server_url,
            }
        self._write(data)

    def client(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValidationError:
            return None

    def store_client(self, info: OAuthClientInformationFull, *, keep_tokens: bool = True) -> None:
        data = self._read()
        data["client"] = info.model_dump(mode="json", exclude_none=True)
        if not keep_tokens:  # tokens issued to another client are not this one's
            data.pop("tokens", None)
            data.pop("expires_at", None)
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.store_client(client_info)


class LoopbackCallback:
    """The redirect URI's server: 127.0.0.1, one authorization response, then it stops."""

    def __init__(self, port: int = CALLBACK_PORT, timeout: float = SIGN_IN_TIMEOUT_S) -> None:
        self.port = port
        self.timeout = timeout
        self._result: dict[str, str] | None = None
        self._done = threading.Event()
        self._server: HTTPServer | None = None

    @property
    def redirect_uri(self) -> str:
        # `localhost` rather than 127.0.0.1: some providers (Amazon Cognito among them)
        # accept plain-http redirect URIs only for that name. The server binds 127.0.0.1.
        return f"http://localhost:{self.port}{CALLBACK_PATH}"

    def start(self) -> None:
        if self._server is not None:
            return
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path != CALLBACK_PATH or not ({"code", "error"} & set(query)):
                    self.send_error(404)
                    return
                callback._result = query
                ok = "code" in query
                text = "Signed in. You can close this tab." if ok else "Sign-in failed."
                body = f"<!doctype html><p>{text}</p>".encode()
                self.send_response(200 if ok else 400)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                callback._done.set()

            def log_message(self, format: str, *args: Any) -> None:
                return  # the query holds the authorization code: never log it

        try:
            self._server = HTTPServer(("127.0.0.1", self.port), Handler)
        except OSError as exc:
            raise OAuthFlowError(
                f"cannot listen on 127.0.0.1:{self.port} for the sign-in redirect "
                f"({exc.strerror}); choose another port with --callback-port"
            ) from exc
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def wait(self) -> AuthorizationCodeResult:
        """The authorization response (the SDK checks `state` and `iss`)."""
        try:
            arrived = await anyio.to_thread.run_sync(self._done.wait, self.timeout)
        finally:
            self.stop()
        self._done.clear()
        result, self._result = self._result or {}, None
        if not arrived:
            raise OAuthFlowError(f"no sign-in within {self.timeout:.0f} s")
        if "error" in result:
            reason = result.get("error_description") or result["error"]
            raise OAuthFlowError(f"sign-in refused by the authorization server: {reason}")
        return AuthorizationCodeResult(
            code=result["code"], state=result.get("state"), iss=result.get("iss")
        )


def open_browser(err: TextIO = sys.stderr) -> Callable[[str], Any]:
    """A redirect handler: print the authorization URL and open it in the browser."""

    async def handler(url: str) -> None:
        print(f"Sign in in your browser; if it does not open, visit:\n  {url}", file=err)
        err.flush()
        await anyio.to_thread.run_sync(webbrowser.open, url)

    return handler


def oauth_provider(
    server_url: str,
    *,
    cache: TokenCache | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    client_metadata_url: str | None = None,
    callback: LoopbackCallback | None = None,
    redirect_handler: Callable[[str], Any] | None = None,
) -> OAuthClientProvider:
    """An httpx auth that signs in to `server_url` when it answers 401 and keeps the tokens.

    With `client_id` (and `client_secret` for a confidential client) the client is the one
    registered with the provider; otherwise the SDK registers one dynamically, or uses
    `client_metadata_url` as its client id where the server supports metadata documents.
    """
    cache = cache or TokenCache(server_url)
    callback = callback or LoopbackCallback()
    handler = redirect_handler or open_browser()

    async def redirect(url: str) -> None:
        callback.start()  # listening before the browser can arrive
        await handler(url)

    if client_id:
        _remember_client(cache, client_id, client_secret, callback.redirect_uri)
    metadata = OAuthClientMetadata(
        client_name="mcp-tasks",
        redirect_uris=[AnyUrl(callback.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",  # noqa: S106 - a public client: no secret at all
    )
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=metadata,
        storage=cache,
        redirect_handler=redirect,
        callback_handler=callback.wait,
        client_metadata_url=client_metadata_url,
    )
    # The SDK learns a token's expiry only when it receives it; tell it the cached one's, so a
    # later process refreshes an expired token instead of sending it (and where to).
    cache.attach(provider.context)
    expires_at = cache.expires_at()
    if expires_at is not None:
        provider.context.token_expiry_time = expires_at - _EXPIRY_MARGIN_S
    return provider


def _remember_client(
    cache: TokenCache, client_id: str, client_secret: str | None, redirect_uri: str
) -> None:
    """Store a pre-registered client unless the cache already holds that very client."""
    current = cache.client()
    if current is not None and current.client_id == client_id:
        return
    info = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=client_secret,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    cache.store_client(info, keep_tokens=False)


# -- the command line's sign-in options ------------------------------------------------------------

CLIENT_ID_ENV = "MCP_TASKS_CLIENT_ID"
CLIENT_SECRET_ENV = "MCP_TASKS_CLIENT_SECRET"  # noqa: S105 - the variable's name, not a secret
CALLBACK_PORT_ENV = "MCP_TASKS_CALLBACK_PORT"
SIGN_IN_TIMEOUT_ENV = "MCP_TASKS_SIGN_IN_TIMEOUT"


def add_sign_in_arguments(parser: argparse.ArgumentParser) -> None:
    """`mcp-tasks`' options for signing in (each defaults to suppressed; see `sign_in_defaults`)."""
    suppress = argparse.SUPPRESS
    parser.add_argument(
        "--client-id",
        default=suppress,
        help=f"a client id registered with the server's provider (default: ${CLIENT_ID_ENV}; "
        "without one the client registers itself where the provider allows)",
    )
    parser.add_argument(
        "--client-secret",
        default=suppress,
        help=f"that client's secret, for confidential clients (default: ${CLIENT_SECRET_ENV})",
    )
    parser.add_argument(
        "--client-metadata-url",
        default=suppress,
        metavar="URL",
        help="an HTTPS client metadata document to use as client id where supported",
    )
    parser.add_argument(
        "--callback-port",
        type=int,
        default=suppress,
        metavar="PORT",
        help=f"loopback port of the sign-in redirect (default: ${CALLBACK_PORT_ENV} or "
        f"{CALLBACK_PORT}; the redirect URI is http://localhost:PORT/callback)",
    )


def sign_in_defaults(args: argparse.Namespace, env: dict[str, str] | None = None) -> None:
    """Fill the sign-in options the command line left out, from the environment."""
    env = dict(os.environ if env is None else env)
    values: dict[str, Any] = {
        "client_id": env.get(CLIENT_ID_ENV) or None,
        "client_secret": env.get(CLIENT_SECRET_ENV) or None,
        "client_metadata_url": None,
        "callback_port": int(env.get(CALLBACK_PORT_ENV) or CALLBACK_PORT),
        "sign_in_timeout": float(env.get(SIGN_IN_TIMEOUT_ENV) or SIGN_IN_TIMEOUT_S),
    }
    for key, value in values.items():
        if not hasattr(args, key):
            setattr(args, key, value)


def no_browser(url: str) -> Callable[[str], Any]:
    """A redirect handler for commands that never prompt: the sign-in stops, naming `login`.

    A cached token, or a refresh of it, needs no browser and never comes here."""

    async def handler(authorization_url: str) -> None:
        raise SignInNeeded(
            f"{url} wants a sign-in, which --json never starts: run mcp-tasks login {url} "
            "first (or pass --token)"
        )

    return handler


def auth_for(
    args: argparse.Namespace, err: TextIO = sys.stderr, *, interactive: bool = True
) -> OAuthClientProvider:
    """The sign-in for a command's URL and options (tokens cached per server); not
    `interactive`, a sign-in that needs the browser fails at once (`no_browser`)."""
    # The SDK logs a failed flow with its traceback; the command reports it in one line.
    logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())
    logging.getLogger("mcp.client.auth").propagate = False
    return oauth_provider(
        args.url,
        client_id=args.client_id,
        client_secret=args.client_secret,
        client_metadata_url=args.client_metadata_url,
        callback=LoopbackCallback(port=args.callback_port, timeout=args.sign_in_timeout),
        redirect_handler=open_browser(err) if interactive else no_browser(args.url),
    )
