"""Sealing and opening `requestState`, the server state a multi round-trip request carries.

The state comes back from the client, so it is protected, bound and short-lived:

- **Integrity**: HMAC-SHA256 over the whole token, compared in its one canonical encoding (a
  MAC written another way, say with padding or other trailing bits, is refused).
- **Binding**: to what it was issued for (the method, the tool or prompt name, a digest of the
  arguments, and the caller) and to the deployment (`audience`: a state one stack issued does
  not open on another that shares its secret). It expires.
- **Confidentiality where it matters**: the answers the client gave are in clear (it has seen
  them); the results of `ctx.step(...)` are the server's own and are encrypted (AES-GCM from
  `cryptography`, imported only when a state holds steps).
- **Rotation**: each token names the key that sealed it (`kid`, derived from the secret). The
  codec seals with the current secret and opens with any secret its source still accepts; an
  unknown `kid` makes it ask the source once more (another function may have rotated first).

Format: ``v2.<kid>.<base64url(json payload)>.<base64url(mac)>``; the payload holds the binding,
the answers, the keys asked in the round that issued it (`outstanding`: the only keys the next
round may answer), the sealed steps and the issue time. Any mismatch is answered as invalid
params, with one message that does not say which check failed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from mcp_tasks_aws.protocol.errors import InvalidParams

_VERSION = "v2"
MIN_SECRET_BYTES = 32
MAX_STATE_CHARS = 512 * 1024
"""Largest state sealed or opened: well under the request body limit it must fit in."""
_TOKEN = re.compile(r"v2\.([A-Za-z0-9_-]{8})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})")
_NONCE_BYTES = 12


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def digest(value: Any) -> str:
    """A short stable digest of a JSON value (arguments, principal) to bind state to it."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return _b64(hashlib.sha256(canonical.encode()).digest()[:16])


class SecretSource(Protocol):
    """Where the codec's secrets come from (configuration, or a secret store)."""

    def secrets(self, *, refresh: bool = False) -> Sequence[bytes]:
        """The current secret first, then any still accepted during a rotation.

        `refresh` asks for a fresh read (a state sealed under an unknown key arrived); a source
        may rate-limit it.
        """
        ...


class StaticSecrets:
    """Secrets given up front (the embedded stack, tests)."""

    def __init__(self, current: bytes, *previous: bytes) -> None:
        self._secrets = [current, *previous]
        for secret in self._secrets:
            check_secret(secret)

    def secrets(self, *, refresh: bool = False) -> Sequence[bytes]:
        return self._secrets


class NamedKey(Protocol):
    """A derived key that names itself (its id travels in what it seals)."""

    @property
    def kid(self) -> str: ...


K = TypeVar("K", bound=NamedKey)


class DerivedKeys(Generic[K]):
    """The keys derived from a secret source's secrets, current first, derived again only when
    the secrets change (a rotation): what every sealer of this package keys itself with."""

    def __init__(self, secrets: SecretSource | bytes, derive: Callable[[bytes], K]) -> None:
        self._source: SecretSource = (
            StaticSecrets(secrets) if isinstance(secrets, bytes) else secrets
        )
        self._derive = derive
        self._keys: list[K] = []
        self._derived_from: tuple[bytes, ...] = ()
        self._lock = threading.Lock()

    def current(self, *, refresh: bool = False) -> list[K]:
        """The keys of the secrets the source accepts now (`refresh`: read it afresh)."""
        secrets = tuple(self._source.secrets(refresh=refresh))
        with self._lock:
            if secrets != self._derived_from:
                for secret in secrets:
                    check_secret(secret)
                self._keys = [self._derive(secret) for secret in secrets]
                self._derived_from = secrets
            return self._keys

    def named(self, kid: str) -> K | None:
        """The key `kid` names, reading the source afresh once if no current key has it (a
        token sealed after a rotation this function has not seen yet)."""
        for refresh in (False, True):
            for key in self.current(refresh=refresh):
                if key.kid == kid:
                    return key
        return None


def check_secret(secret: bytes) -> None:
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"the request-state secret must be at least {MIN_SECRET_BYTES} bytes")


@dataclass(frozen=True)
class _Key:
    kid: str
    mac: bytes
    enc: bytes


def _derive(secret: bytes) -> _Key:
    def sub(label: str) -> bytes:
        return hmac.new(secret, f"mcp-tasks-aws/requestState/{label}".encode(), "sha256").digest()

    return _Key(kid=_b64(sub("kid"))[:8], mac=sub("mac"), enc=sub("enc"))


@dataclass(frozen=True)
class SealedRound:
    """What one round hands the next: answers so far, step results, the keys just asked."""

    answers: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    outstanding: frozenset[str] = frozenset()


class RequestStateCodec:
    """Seals and opens request states with the secrets of one source, for one deployment."""

    def __init__(
        self,
        secrets: SecretSource | bytes,
        *,
        audience: str = "",
        max_age_seconds: int = 3600,
        max_state_chars: int = MAX_STATE_CHARS,
    ) -> None:
        self._keys = DerivedKeys(secrets, _derive)
        self._audience = audience
        self._max_age = max_age_seconds
        self._max_chars = max_state_chars

    # -- keys ---------------------------------------------------------------------------------

    def _mac(self, key: _Key, body: str) -> str:
        message = f"{_VERSION}\x00{key.kid}\x00{self._audience}\x00{body}".encode()
        return _b64(hmac.new(key.mac, message, hashlib.sha256).digest())

    def _aad(self, key: _Key) -> bytes:
        return f"{_VERSION}\x00{key.kid}\x00{self._audience}".encode()

    # -- seal and open ------------------------------------------------------------------------

    def seal(self, binding: dict[str, Any], state: SealedRound) -> str:
        key = self._keys.current()[0]
        payload: dict[str, Any] = {
            "b": binding,
            "a": state.answers,
            "o": sorted(state.outstanding),
            "iat": int(time.time()),
        }
        if state.steps:
            payload["s"] = _encrypt(key.enc, self._aad(key), state.steps)
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        token = f"{_VERSION}.{key.kid}.{body}.{self._mac(key, body)}"
        if len(token) > self._max_chars:
            raise InvalidParams("The answers given so far are too large to carry to the next round")
        return token

    def open(self, token: str, binding: dict[str, Any]) -> SealedRound:
        """Verify and return what `token` carries; -32602 on any mismatch."""
        invalid = InvalidParams("Invalid requestState")
        if len(token) > self._max_chars:
            raise invalid
        match = _TOKEN.fullmatch(token)
        if match is None:
            raise invalid
        kid, body, mac = match.groups()
        key = self._keys.named(kid)
        # The MAC is compared as text in its canonical encoding: base64 decoding is lenient
        # about trailing bits and padding, so comparing decoded bytes would accept variants.
        if key is None or not hmac.compare_digest(mac, self._mac(key, body)):
            raise invalid
        try:
            payload = json.loads(_unb64(body))
        except (ValueError, binascii.Error) as exc:
            raise invalid from exc
        if not isinstance(payload, dict) or payload.get("b") != binding:
            raise invalid
        issued = payload.get("iat")
        if not isinstance(issued, int) or time.time() - issued > self._max_age:
            raise InvalidParams("requestState has expired; call again without it")
        answers, outstanding = payload.get("a"), payload.get("o")
        if not isinstance(answers, dict) or not isinstance(outstanding, list):
            raise invalid
        steps: dict[str, Any] = {}
        if "s" in payload:
            steps = _decrypt(key.enc, self._aad(key), payload["s"], invalid)
        return SealedRound(answers, steps, frozenset(str(k) for k in outstanding))


def _encrypt(key: bytes, aad: bytes, value: dict[str, Any]) -> str:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # only states with steps

    nonce = os.urandom(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, json.dumps(value, separators=(",", ":")).encode(), aad)
    return _b64(nonce + sealed)


def _decrypt(key: bytes, aad: bytes, text: Any, invalid: InvalidParams) -> dict[str, Any]:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not isinstance(text, str):
        raise invalid
    try:
        raw = _unb64(text)
        plain = AESGCM(key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], aad)
        value = json.loads(plain)
    except (ValueError, binascii.Error, InvalidTag) as exc:
        raise invalid from exc
    if not isinstance(value, dict):
        raise invalid
    return value
