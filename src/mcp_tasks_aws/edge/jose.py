"""Checking the signature of a compact JWS (RFC 7515) with a public JWK (RFC 7517).

Owns: strict parsing of a token's three base64url segments, the algorithm allow-list, turning
a JWK into a public key, and the signature check, which is `cryptography`'s.

Invariants:
- only asymmetric algorithms are accepted (RS*, PS*, ES*, EdDSA); `none` and the HMAC family
  are refused before any key is looked at, so a public key can never be used as an HMAC secret;
- a key verifies only the algorithms its type allows (its curve for EC and OKP, its `alg` when
  the JWK names one, `use` must be `sig` when present), and RSA keys have at least 2048 bits;
- base64url is decoded canonically (URL alphabet, no padding, no stray trailing bits), so a
  token has one spelling;
- `cryptography` is imported on the first signature check: a cold start that checks no token
  never pays for it.

Why not PyJWT: importing `jwt` loads cryptography's X.509 stack as well, about 75 ms on the
bench machine against about 13 ms for the primitives used here, which would put the API
function's first authenticated request above the boto3 floor (`make bench`, cold-start). The
cryptographic work is the same library's either way; this module only parses and dispatches.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_MAX_TOKEN_CHARS = 16_384

# alg -> (JWK kty, curve or None, hash name, signature scheme)
ALGORITHMS: dict[str, tuple[str, str | None, str, str]] = {
    "RS256": ("RSA", None, "SHA256", "pkcs1v15"),
    "RS384": ("RSA", None, "SHA384", "pkcs1v15"),
    "RS512": ("RSA", None, "SHA512", "pkcs1v15"),
    "PS256": ("RSA", None, "SHA256", "pss"),
    "PS384": ("RSA", None, "SHA384", "pss"),
    "PS512": ("RSA", None, "SHA512", "pss"),
    "ES256": ("EC", "P-256", "SHA256", "ecdsa"),
    "ES384": ("EC", "P-384", "SHA384", "ecdsa"),
    "ES512": ("EC", "P-521", "SHA512", "ecdsa"),
    "EdDSA": ("OKP", None, "", "eddsa"),
}
_EC_SIZES = {"P-256": 32, "P-384": 48, "P-521": 66}
_MIN_RSA_BITS = 2048


class JoseError(Exception):
    """A token or key that cannot be checked; the message is ours and safe to show a client."""


class MalformedToken(JoseError):
    """Not a compact JWS: wrong segment count, bad base64url or JSON, or no `alg`."""


class UnsupportedAlgorithm(JoseError):
    """`alg` is `none`, symmetric, or unknown."""


class KeyMismatch(JoseError):
    """The key cannot verify this algorithm (type, curve, `alg` or `use` disagree)."""


class BadSignature(JoseError):
    """The signature does not verify with the key."""


def b64url_decode(segment: str) -> bytes:
    """Decode unpadded base64url, refusing anything but its one canonical spelling."""
    if not _B64URL.fullmatch(segment) or len(segment) % 4 == 1:
        raise MalformedToken("the token is malformed (invalid base64url)")
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError) as exc:
        raise MalformedToken("the token is malformed (invalid base64url)") from exc
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != segment:
        raise MalformedToken("the token is malformed (non-canonical base64url)")
    return raw


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedToken(f"the token is malformed ({what} is not JSON)") from exc
    if not isinstance(value, dict):
        raise MalformedToken(f"the token is malformed ({what} is not a JSON object)")
    return value


@dataclass(frozen=True)
class CompactJws:
    """A parsed, not yet verified, compact JWS."""

    header: dict[str, Any]
    payload: bytes
    signing_input: bytes
    signature: bytes

    @property
    def alg(self) -> str:
        return str(self.header["alg"])

    @property
    def kid(self) -> str | None:
        kid = self.header.get("kid")
        return kid if isinstance(kid, str) else None

    def claims(self) -> dict[str, Any]:
        """The payload as a JSON object (call only after the signature verified)."""
        return _json_object(self.payload, "the payload")


def parse(token: str) -> CompactJws:
    """Split and decode a compact JWS; refuse `none`, symmetric and unknown algorithms."""
    if len(token) > _MAX_TOKEN_CHARS:
        raise MalformedToken("the token is malformed (too long)")
    parts = token.split(".")
    if len(parts) != 3:
        raise MalformedToken("the token is malformed (not a signed JWT)")
    header = _json_object(b64url_decode(parts[0]), "the header")
    alg = header.get("alg")
    if not isinstance(alg, str):
        raise MalformedToken("the token is malformed (no alg)")
    if alg not in ALGORITHMS:
        raise UnsupportedAlgorithm(
            "the token's algorithm is not accepted (asymmetric signatures only: "
            "RS*, PS*, ES*, EdDSA)"
        )
    if "crit" in header:  # no extension is understood here, so a critical one must fail
        raise MalformedToken("the token is malformed (unsupported critical header)")
    payload = b64url_decode(parts[1])
    signature = b64url_decode(parts[2])
    if not signature:
        raise BadSignature("the token's signature is missing")
    signing_input = f"{parts[0]}.{parts[1]}".encode("ascii")
    return CompactJws(header, payload, signing_input, signature)


def key_fits(jwk: dict[str, Any], alg: str) -> bool:
    """Whether this JWK may verify `alg` (type, curve, `alg` and `use` agree)."""
    kty, curve, _, _ = ALGORITHMS[alg]
    if jwk.get("kty") != kty or jwk.get("alg", alg) != alg or jwk.get("use", "sig") != "sig":
        return False
    if kty == "EC":
        return bool(jwk.get("crv") == curve)
    if kty == "OKP":
        return jwk.get("crv") in ("Ed25519", "Ed448")
    return True


def public_key(jwk: dict[str, Any]) -> Any:
    """The `cryptography` public key a JWK describes (RSA, EC or OKP)."""
    try:
        kty = jwk.get("kty")
        if kty == "RSA":
            from cryptography.hazmat.primitives.asymmetric import rsa

            n = int.from_bytes(b64url_decode(str(jwk["n"])), "big")
            e = int.from_bytes(b64url_decode(str(jwk["e"])), "big")
            if n.bit_length() < _MIN_RSA_BITS:
                raise KeyMismatch("the signing key is too weak")
            return rsa.RSAPublicNumbers(e, n).public_key()
        if kty == "EC":
            from cryptography.hazmat.primitives.asymmetric import ec

            curves = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}
            curve = curves[str(jwk["crv"])]
            x = int.from_bytes(b64url_decode(str(jwk["x"])), "big")
            y = int.from_bytes(b64url_decode(str(jwk["y"])), "big")
            return ec.EllipticCurvePublicNumbers(x, y, curve).public_key()
        if kty == "OKP":
            from cryptography.hazmat.primitives.asymmetric import ed448, ed25519

            raw = b64url_decode(str(jwk["x"]))
            if jwk.get("crv") == "Ed25519":
                return ed25519.Ed25519PublicKey.from_public_bytes(raw)
            if jwk.get("crv") == "Ed448":
                return ed448.Ed448PublicKey.from_public_bytes(raw)
    except KeyMismatch:
        raise
    except (MalformedToken, KeyError, ValueError, TypeError) as exc:
        raise KeyMismatch("the signing key is malformed") from exc
    raise KeyMismatch("the signing key has an unsupported type")


def verify(jws: CompactJws, jwk: dict[str, Any], key: Any = None) -> None:
    """Check `jws`'s signature with `jwk` (or its already-built public `key`)."""
    alg = jws.alg
    if not key_fits(jwk, alg):
        raise KeyMismatch("the signing key does not match the token's algorithm")
    key = key if key is not None else public_key(jwk)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

    _, curve, hash_name, scheme = ALGORITHMS[alg]
    signature, data = jws.signature, jws.signing_input
    try:
        if scheme == "eddsa":
            key.verify(signature, data)
            return
        digest = getattr(hashes, hash_name)()
        if scheme == "pkcs1v15":
            key.verify(signature, data, padding.PKCS1v15(), digest)
        elif scheme == "pss":
            pss = padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size)
            key.verify(signature, data, pss, digest)
        else:  # ecdsa: JWS carries r || s, each the curve's size (RFC 7518 section 3.4)
            size = _EC_SIZES[str(curve)]
            if len(signature) != 2 * size:
                raise BadSignature("the token's signature does not verify")
            r = int.from_bytes(signature[:size], "big")
            s = int.from_bytes(signature[size:], "big")
            key.verify(utils.encode_dss_signature(r, s), data, ec.ECDSA(digest))
    except InvalidSignature as exc:
        raise BadSignature("the token's signature does not verify") from exc
    except (TypeError, ValueError, AttributeError) as exc:  # a key object of the wrong kind
        raise KeyMismatch("the signing key does not match the token's algorithm") from exc
