"""The authorization server's signing keys (a JWKS), fetched once per execution environment.

Owns: where the keys come from (a configured `jwks_uri`, or the one the issuer's metadata
names), fetching them, and the cache.

Invariants:
- nothing is fetched at import: the first token check fetches, so a cold start that checks no
  token never opens a connection;
- the set is kept for the life of the execution environment and fetched again only when a
  token names a key the set lacks, and then at most once per `min_refresh_seconds`: a stream
  of tokens with made-up `kid`s costs one fetch per interval, not one per request;
- one fetch at a time (a lock): concurrent requests wait for it instead of fetching as well;
- a failed refetch keeps the keys already held; only having no keys at all is an outage;
- HTTPS only, except plain HTTP to a loopback address (the embedded stack's local
  authorization server).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcp_tasks_aws.edge import jose

logger = logging.getLogger(__name__)

_MAX_DOCUMENT_BYTES = 256 * 1024
_FETCH_TIMEOUT_S = 5.0
# With no keys at all every request fails, so an environment whose first fetch failed tries
# again sooner than the unknown-kid interval (still never more than once per this).
_RETRY_WITHOUT_KEYS_S = 5.0

Fetch = Callable[[str], dict[str, Any]]


class KeysUnavailable(Exception):
    """No signing keys could be fetched: tokens cannot be checked right now."""


class UnknownKey(jose.JoseError):
    """The token names a key the authorization server does not publish (after a refetch)."""


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_fetchable(url: str) -> None:
    """Refuse URLs keys must not come from (anything but HTTPS, or HTTP on loopback)."""
    scheme = urlsplit(url).scheme
    if scheme != "https" and not (scheme == "http" and is_loopback_url(url)):
        raise ValueError(f"{url!r}: keys and metadata are fetched over https only")


def fetch_json(url: str) -> dict[str, Any]:
    """GET a JSON object (bounded size and time); any failure is `KeysUnavailable`."""
    import urllib.error
    import urllib.request

    check_fetchable(url)  # https, or http on loopback: never file: or another scheme
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=_FETCH_TIMEOUT_S) as response:  # noqa: S310
            check_fetchable(response.geturl())  # a redirect must not leave https either
            raw = response.read(_MAX_DOCUMENT_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise KeysUnavailable(f"cannot fetch {url}: {type(exc).__name__}") from exc
    if len(raw) > _MAX_DOCUMENT_BYTES:
        raise KeysUnavailable(f"{url} answered more than {_MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise KeysUnavailable(f"{url} did not answer JSON") from exc
    if not isinstance(document, dict):
        raise KeysUnavailable(f"{url} did not answer a JSON object")
    return document


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer publishes its metadata: RFC 8414 (path inserted), then OIDC discovery."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def discover_jwks_uri(issuer: str, fetch: Fetch = fetch_json) -> str:
    """The `jwks_uri` from the issuer's metadata, which must name this very issuer."""
    failures: list[str] = []
    for url in metadata_urls(issuer):
        try:
            document = fetch(url)
        except KeysUnavailable as exc:
            failures.append(str(exc))
            continue
        if document.get("issuer") != issuer:
            failures.append(f"{url} names another issuer")
            continue
        jwks_uri = document.get("jwks_uri")
        if isinstance(jwks_uri, str) and jwks_uri:
            return jwks_uri
        failures.append(f"{url} names no jwks_uri")
    raise KeysUnavailable("; ".join(failures))


class JwksCache:
    """The issuer's public keys, fetched on first use and again on an unknown key id."""

    def __init__(
        self,
        *,
        issuer: str,
        jwks_uri: str = "",
        min_refresh_seconds: float = 60.0,
        fetch: Fetch = fetch_json,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.jwks_uri = jwks_uri
        self.min_refresh_seconds = min_refresh_seconds
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: list[dict[str, Any]] | None = None
        self._built: dict[int, Any] = {}
        self._fetched_at: float | None = None
        self.fetches = 0
        """How many times the key set was fetched (for tests and logs)."""

    def key_for(self, kid: str | None, alg: str) -> tuple[dict[str, Any], Any]:
        """(JWK, public key) that may verify a token with this `kid` and `alg`.

        Raises `UnknownKey` when none does after the allowed refetch, and `KeysUnavailable` when
        no key set was ever fetched.
        """
        with self._lock:
            if self._keys is None:
                if not self._may_refresh(_RETRY_WITHOUT_KEYS_S):
                    raise KeysUnavailable("the signing keys could not be fetched; retry shortly")
                self._refresh()
            index = self._find(kid, alg)
            if index is None and self._may_refresh(self.min_refresh_seconds):
                try:
                    self._refresh()
                except KeysUnavailable as exc:
                    logger.warning("refetching the signing keys failed: %s", exc)
                index = self._find(kid, alg)
            if index is None:
                if kid is None:
                    raise UnknownKey("the token names no signing key (kid) this server can use")
                raise UnknownKey("the token's signing key (kid) is unknown to its issuer")
            keys = self._keys or []
            if index not in self._built:
                self._built[index] = jose.public_key(keys[index])
            return keys[index], self._built[index]

    def forget(self) -> None:
        """Drop the fetched keys: the next token check fetches them again (after a SnapStart
        restore, whose copies must not share a key set of unknown age, nor its clock)."""
        with self._lock:
            self._keys = None
            self._built = {}
            self._fetched_at = None

    def _may_refresh(self, interval: float) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= interval

    def _find(self, kid: str | None, alg: str) -> int | None:
        fitting = [
            index
            for index, jwk in enumerate(self._keys or [])
            if jose.key_fits(jwk, alg) and (kid is None or jwk.get("kid") == kid)
        ]
        if kid is None and len(fitting) != 1:
            return None  # without a kid only an unambiguous key will do
        return fitting[0] if fitting else None

    def _refresh(self) -> None:
        # The attempt counts even when it fails: an unreachable issuer is not hammered either.
        self._fetched_at = self._clock()
        self.fetches += 1
        if not self.jwks_uri:
            self.jwks_uri = discover_jwks_uri(self.issuer, self._fetch)
        document = self._fetch(self.jwks_uri)
        keys = document.get("keys")
        if not isinstance(keys, list):
            raise KeysUnavailable(f"{self.jwks_uri} holds no key list")
        self._keys = [key for key in keys if isinstance(key, dict)]
        self._built = {}
