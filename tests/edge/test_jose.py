"""edge/jose.py: compact JWS verification, checked against tokens signed by joserfc."""

from __future__ import annotations

import json
from typing import Any

import pytest
from joserfc.jwk import RSAKey

from mcp_tasks_aws.edge import jose
from support.oauth import Issuer, b64, unsigned


@pytest.mark.parametrize("alg", ["RS256", "RS384", "RS512", "PS256", "PS512", "ES256", "ES384",
                                 "ES512", "EdDSA"])  # fmt: skip
def test_every_accepted_algorithm_verifies_a_token_signed_elsewhere(alg: str) -> None:
    issuer = Issuer()
    key = issuer.add_key("k", alg)
    token = issuer.token("k", alg)
    jws = jose.parse(token)
    jose.verify(jws, key.as_dict(private=False))
    assert jws.claims()["sub"] == "alice"


def _public(issuer: Issuer, kid: str = "k1") -> dict[str, Any]:
    return dict(issuer.keys[kid].as_dict(private=False))


@pytest.mark.parametrize(
    ("alg", "error"),
    [
        ("none", jose.UnsupportedAlgorithm),
        ("HS256", jose.UnsupportedAlgorithm),
        ("HS512", jose.UnsupportedAlgorithm),
        ("RSA-OAEP", jose.UnsupportedAlgorithm),
    ],
)
def test_none_and_symmetric_algorithms_are_refused_before_any_key(
    alg: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        jose.parse(unsigned({"alg": alg}, {"sub": "alice"}, b"sig"))


def test_an_hmac_made_with_the_public_key_never_verifies(issuer: Issuer) -> None:
    # The classic confusion: HS256 keyed with the RSA public key's bytes.
    import hashlib
    import hmac

    header = b64(json.dumps({"alg": "HS256", "kid": "k1"}).encode())
    payload = b64(json.dumps({"sub": "mallory"}).encode())
    secret = json.dumps(_public(issuer)).encode()
    mac = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    with pytest.raises(jose.UnsupportedAlgorithm):
        jose.parse(f"{header}.{payload}.{b64(mac)}")


@pytest.mark.parametrize(
    "token",
    [
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "!!!.e30.sig",
        "e30.e30.c2ln",  # header without alg
        f"{b64(b'[1]')}.e30.c2ln",  # header not an object
        f"{b64(b'{bad json')}.e30.c2ln",
        f"{b64(json.dumps({'alg': 'RS256', 'crit': ['exp']}).encode())}.e30.c2ln",
        f"{b64(json.dumps({'alg': 'RS256'}).encode())}=.e30.c2ln",  # padding
        f"{b64(json.dumps({'alg': 'RS256'}).encode())}.e30.",  # empty signature
        "x" * 20_000,
    ],
    ids=[
        "empty",
        "one-segment",
        "two-segments",
        "four-segments",
        "bad-base64",
        "no-alg",
        "header-not-object",
        "header-not-json",
        "critical-extension",
        "padded-base64",
        "empty-signature",
        "oversized",
    ],
)
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(jose.JoseError):
        jose.parse(token)


@pytest.mark.parametrize("segment", ["QQ", "QR", "QS"])
def test_base64url_has_one_spelling(segment: str) -> None:
    # "QQ" is b"A"; "QR" and "QS" decode to the same byte with stray trailing bits.
    if segment == "QQ":
        assert jose.b64url_decode(segment) == b"A"
    else:
        with pytest.raises(jose.MalformedToken):
            jose.b64url_decode(segment)


def test_a_changed_payload_or_signature_does_not_verify(issuer: Issuer) -> None:
    header, payload, signature = issuer.token().split(".")
    forged_payload = b64(json.dumps({"sub": "mallory"}).encode())
    with pytest.raises(jose.BadSignature):
        jose.verify(jose.parse(f"{header}.{forged_payload}.{signature}"), _public(issuer))
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    with pytest.raises(jose.JoseError):
        jose.verify(jose.parse(f"{header}.{payload}.{flipped}"), _public(issuer))


def test_a_token_signed_by_another_key_does_not_verify(issuer: Issuer) -> None:
    issuer.add_key("other", publish=False)
    token = issuer.token("other", header={"kid": "k1"})
    with pytest.raises(jose.BadSignature):
        jose.verify(jose.parse(token), _public(issuer))


@pytest.mark.parametrize(
    ("changes", "alg"),
    [
        ({"use": "enc"}, "RS256"),
        ({"alg": "RS512"}, "RS256"),
        ({"kty": "EC"}, "RS256"),
    ],
    ids=["encryption-key", "key-for-another-alg", "wrong-type"],
)
def test_a_key_verifies_only_what_it_is_for(
    issuer: Issuer, changes: dict[str, str], alg: str
) -> None:
    jwk = {**_public(issuer), **changes}
    assert not jose.key_fits(jwk, alg)
    with pytest.raises(jose.KeyMismatch):
        jose.verify(jose.parse(issuer.token()), jwk)


def test_an_ec_key_of_another_curve_does_not_fit() -> None:
    issuer = Issuer()
    key = issuer.add_key("e", "ES384")
    assert not jose.key_fits(dict(key.as_dict(private=False)), "ES256")


@pytest.mark.filterwarnings("ignore:Key size should be")
def test_weak_rsa_keys_are_refused() -> None:
    weak = RSAKey.generate_key(1024, parameters={"kid": "weak"}, private=True)
    with pytest.raises(jose.KeyMismatch, match="weak"):
        jose.public_key(dict(weak.as_dict(private=False)))


@pytest.mark.parametrize(
    "jwk",
    [{"kty": "RSA"}, {"kty": "RSA", "n": "!", "e": "AQAB"}, {"kty": "EC", "crv": "P-999"},
     {"kty": "oct", "k": "c2VjcmV0"}, {"kty": "OKP", "crv": "X25519", "x": "AA"}],
    ids=["rsa-without-n", "rsa-bad-n", "unknown-curve", "symmetric", "not-a-signing-curve"],
)  # fmt: skip
def test_malformed_keys_are_refused(jwk: dict[str, Any]) -> None:
    with pytest.raises(jose.KeyMismatch):
        jose.public_key(jwk)
