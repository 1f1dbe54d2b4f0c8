"""Sealing and opening requestState: integrity, canonical MACs, binding to the call and the
deployment, key ids and rotation, encrypted steps, size and expiry."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence

import pytest

from mcp_tasks_aws.protocol.errors import InvalidParams
from mcp_tasks_aws.protocol.request_state import (
    MAX_STATE_CHARS,
    RequestStateCodec,
    SealedRound,
    StaticSecrets,
    digest,
)

SECRET = b"s" * 32
OTHER_SECRET = b"t" * 32
BINDING = {"m": "tools/call", "n": "tool_a", "a": digest({"x": 1}), "p": digest("alice")}
ANSWER = {"action": "accept", "content": {"name": "Alice"}}
STATE = SealedRound(
    answers={"user_name": ANSWER},
    steps={"step:charge": {"receipt": "rcpt-4242-secret"}},
    outstanding=frozenset({"confirm"}),
)
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.fixture
def codec() -> RequestStateCodec:
    return RequestStateCodec(SECRET, audience="stack-a", max_age_seconds=60)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _payload(token: str) -> dict[str, object]:
    payload: dict[str, object] = json.loads(_unb64(token.split(".")[2]))
    return payload


def test_seal_then_open_returns_answers_steps_and_outstanding_keys(
    codec: RequestStateCodec,
) -> None:
    token = codec.seal(BINDING, STATE)
    assert token.startswith("v2.")
    assert codec.open(token, dict(BINDING)) == STATE


def test_a_second_codec_with_the_same_secret_and_audience_opens_the_state(
    codec: RequestStateCodec,
) -> None:
    # Lambda instances share nothing but the secret and the deployment they belong to.
    token = codec.seal(BINDING, STATE)
    assert RequestStateCodec(SECRET, audience="stack-a").open(token, BINDING) == STATE


def test_a_codec_with_another_secret_refuses_it(codec: RequestStateCodec) -> None:
    token = codec.seal(BINDING, STATE)
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        RequestStateCodec(OTHER_SECRET, audience="stack-a").open(token, BINDING)


def test_another_deployment_sharing_the_secret_refuses_it(codec: RequestStateCodec) -> None:
    # Given two stacks configured with the same secret
    token = codec.seal(BINDING, STATE)
    # When a state issued by one is presented to the other, Then it is refused
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        RequestStateCodec(SECRET, audience="stack-b").open(token, BINDING)


def test_step_results_are_not_readable_in_the_state(codec: RequestStateCodec) -> None:
    token = codec.seal(BINDING, STATE)
    payload = _payload(token)
    assert set(payload) == {"b", "a", "o", "s", "iat"}
    assert payload["a"] == {"user_name": ANSWER}
    assert payload["o"] == ["confirm"]
    assert b"rcpt-4242-secret" not in _unb64(token.split(".")[2])
    assert "step:charge" not in json.dumps(payload)


def test_a_state_without_steps_carries_no_ciphertext(codec: RequestStateCodec) -> None:
    token = codec.seal(BINDING, SealedRound(answers={"k": ANSWER}))
    assert "s" not in _payload(token)
    assert codec.open(token, BINDING) == SealedRound(answers={"k": ANSWER})


def test_tampered_body_is_refused(codec: RequestStateCodec) -> None:
    # Given a state whose payload is rewritten to claim another answer, keeping the MAC
    version, kid, body, mac = codec.seal(BINDING, STATE).split(".")
    payload = json.loads(_unb64(body))
    payload["a"]["user_name"]["content"]["name"] = "Mallory"
    forged = f"{version}.{kid}.{_b64(json.dumps(payload).encode())}.{mac}"
    # When it is opened, Then it is refused
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(forged, BINDING)


def test_tampered_mac_is_refused(codec: RequestStateCodec) -> None:
    version, kid, body, mac = codec.seal(BINDING, STATE).split(".")
    raw = bytearray(_unb64(mac))
    raw[0] ^= 0x01
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(f"{version}.{kid}.{body}.{_b64(bytes(raw))}", BINDING)


def _same_bytes_other_last_char(mac: str) -> str:
    """The MAC with its last character changed in the bits base64 decoding ignores."""
    index = B64.index(mac[-1])
    variant = B64[index ^ 0b11]
    assert _unb64(mac[:-1] + variant) == _unb64(mac)
    return mac[:-1] + variant


@pytest.mark.parametrize(
    "variant",
    [
        lambda mac: mac + "=",
        lambda mac: mac + "!!!!",
        lambda mac: mac + "==",
        _same_bytes_other_last_char,
        lambda mac: base64.b64encode(_unb64(mac)).decode(),  # standard alphabet, padded
    ],
    ids=["padding", "trailing-junk", "double-padding", "other-trailing-bits", "std-alphabet"],
)
def test_only_the_canonical_mac_is_accepted(
    codec: RequestStateCodec, variant: Callable[[str], str]
) -> None:
    # Given a valid state, When its MAC is written another way that decodes to the same bytes
    version, kid, body, mac = codec.seal(BINDING, STATE).split(".")
    other = variant(mac)
    assert other != mac
    # Then it is refused
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(f"{version}.{kid}.{body}.{other}", BINDING)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t + "-TAMPERED",
        lambda t: t + ".extra",
        lambda t: "v1" + t[2:],
        lambda t: t.replace(".", "", 1),
        lambda t: "",
        lambda t: "v2...",
        lambda t: "v2.!!!!!!!!.???.???",
        lambda t: "x" * (MAX_STATE_CHARS + 1),
    ],
    ids=[
        "appended-TAMPERED",
        "extra-part",
        "other-version",
        "missing-separator",
        "empty",
        "empty-parts",
        "not-base64",
        "oversized",
    ],
)
def test_malformed_tokens_are_refused(
    codec: RequestStateCodec, mangle: Callable[[str], str]
) -> None:
    token = codec.seal(BINDING, STATE)
    with pytest.raises(InvalidParams):
        codec.open(mangle(token), BINDING)


def test_a_tampered_step_ciphertext_is_refused_even_with_a_valid_mac() -> None:
    # Given a state whose step ciphertext is changed and its MAC recomputed (as only the
    # server could), so that only the AEAD tag stands in the way
    codec = RequestStateCodec(SECRET)
    token = codec.seal(BINDING, STATE)
    _, kid, body, _ = token.split(".")
    payload = json.loads(_unb64(body))
    raw = bytearray(_unb64(payload["s"]))
    raw[-1] ^= 0x01
    payload["s"] = _b64(bytes(raw))
    new_body = _b64(json.dumps(payload).encode())
    key = codec._keys.named(kid)
    assert key is not None
    forged = f"v2.{kid}.{new_body}.{codec._mac(key, new_body)}"
    # When it is opened, Then the AEAD refuses it
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(forged, BINDING)


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("m", "prompts/get"),
        ("n", "tool_b"),
        ("a", digest({"x": 2})),
        ("p", digest("bob")),
    ],
    ids=["other-method", "other-tool", "other-arguments", "other-principal"],
)
def test_state_is_bound_to_what_it_was_issued_for(
    codec: RequestStateCodec, field: str, other: str
) -> None:
    token = codec.seal(BINDING, STATE)
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(token, {**BINDING, field: other})


def test_expired_state_is_refused(
    codec: RequestStateCodec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a state sealed now
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    token = codec.seal(BINDING, STATE)
    # When it is opened just within its age, Then it opens
    monkeypatch.setattr(time, "time", lambda: now + 59)
    assert codec.open(token, BINDING) == STATE
    # When it is opened after max_age_seconds, Then it is refused as expired
    monkeypatch.setattr(time, "time", lambda: now + 61)
    with pytest.raises(InvalidParams, match="expired"):
        codec.open(token, BINDING)


# -- key ids and rotation ---------------------------------------------------------------------


def test_each_state_names_the_key_that_sealed_it() -> None:
    old = RequestStateCodec(SECRET).seal(BINDING, STATE)
    new = RequestStateCodec(OTHER_SECRET).seal(BINDING, STATE)
    assert old.split(".")[1] != new.split(".")[1]
    assert old.split(".")[1] == RequestStateCodec(SECRET).seal(BINDING, STATE).split(".")[1]


def test_during_a_rotation_both_keys_open_and_the_new_one_seals() -> None:
    # Given a state sealed before the rotation, and a codec that has rotated (new, old)
    before = RequestStateCodec(SECRET).seal(BINDING, STATE)
    rotated = RequestStateCodec(StaticSecrets(OTHER_SECRET, SECRET))
    # Then the old state still opens, and new states are sealed with the new key
    assert rotated.open(before, BINDING) == STATE
    after = rotated.seal(BINDING, STATE)
    assert RequestStateCodec(OTHER_SECRET).open(after, BINDING) == STATE
    with pytest.raises(InvalidParams):
        RequestStateCodec(SECRET).open(after, BINDING)
    # And once the old key is dropped, its states no longer open
    with pytest.raises(InvalidParams):
        RequestStateCodec(OTHER_SECRET).open(before, BINDING)


class RotatingSource:
    """A secret source that learns about a rotation only when asked to refresh."""

    def __init__(self) -> None:
        self.refreshes = 0

    def secrets(self, *, refresh: bool = False) -> Sequence[bytes]:
        if refresh:
            self.refreshes += 1
        return [OTHER_SECRET, SECRET] if self.refreshes else [SECRET]


def test_an_unknown_key_id_makes_the_codec_read_its_secrets_again() -> None:
    # Given a function that has not seen the rotation yet, and a state sealed after it
    source = RotatingSource()
    stale = RequestStateCodec(source)
    sealed_elsewhere = RequestStateCodec(OTHER_SECRET).seal(BINDING, STATE)
    # When it opens that state, Then it refreshes its secrets once and the state opens
    assert stale.open(sealed_elsewhere, BINDING) == STATE
    assert source.refreshes == 1
    # And a forged key id costs one refresh, then is refused
    version, _, body, mac = sealed_elsewhere.split(".")
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        stale.open(f"{version}.AAAAAAAA.{body}.{mac}", BINDING)


# -- size -------------------------------------------------------------------------------------


def test_a_large_answer_seals_into_a_state_that_opens(codec: RequestStateCodec) -> None:
    big = SealedRound(answers={"k": {"action": "accept", "content": {"text": "x" * 300_000}}})
    assert codec.open(codec.seal(BINDING, big), BINDING) == big


def test_a_state_too_large_to_open_is_never_sealed(codec: RequestStateCodec) -> None:
    huge = SealedRound(answers={"k": {"action": "accept", "content": {"text": "x" * 600_000}}})
    with pytest.raises(InvalidParams, match="too large"):
        codec.seal(BINDING, huge)


@pytest.mark.parametrize("secret", [b"", b"short", b"x" * 31])
def test_short_secret_is_rejected(secret: bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        RequestStateCodec(secret)


def test_digest_is_stable_and_key_order_independent() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    assert digest("alice") != digest("bob")
