"""Rotating the state secret keeps 2025-11-25 sessions working across warm functions: tokens are
sealed with the current secret and open under the previous one too, as `requestState` does."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mcp_tasks_aws.app import App
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from support.legacy import LegacyClient
from support.mcp import conformance_settings

OLD = b"o" * 32
NEW = b"n" * 32


class RotatingSecrets:
    """A secret source as a function sees one: what it read last, until it reads again."""

    def __init__(self, *known: bytes, after_refresh: Sequence[bytes] = ()) -> None:
        self.known = list(known)
        self.after_refresh = list(after_refresh)
        self.refreshes = 0

    def secrets(self, *, refresh: bool = False) -> Sequence[bytes]:
        if refresh:
            self.refreshes += 1
            if self.after_refresh:
                self.known = self.after_refresh
        return self.known


def test_a_token_sealed_under_the_previous_secret_still_opens() -> None:
    before = Sealer(OLD, "legacy-sessions")
    token = before.seal("s1", {"a": 1}, expires_at=before.now() + 60)
    after = Sealer(RotatingSecrets(NEW, OLD), "legacy-sessions")
    assert after.open("s1", token)["a"] == 1
    # Sealed with the current secret: a function that knows only the new one opens it.
    assert Sealer(NEW, "legacy-sessions").open(
        "s1", after.seal("s1", {}, expires_at=after.now() + 60)
    )


def test_an_unknown_key_makes_the_sealer_read_its_secrets_again() -> None:
    rotated = Sealer(NEW, "legacy-sessions")
    token = rotated.seal("s1", {"a": 1}, expires_at=rotated.now() + 60)
    source = RotatingSecrets(OLD, after_refresh=[NEW, OLD])  # warm: has not seen the rotation
    warm = Sealer(source, "legacy-sessions")
    assert warm.open("s1", token)["a"] == 1
    assert source.refreshes == 1


def test_a_secret_no_longer_accepted_does_not_open_a_token() -> None:
    retired = Sealer(OLD, "legacy-sessions")
    token = retired.seal("s1", {}, expires_at=retired.now() + 60)
    with pytest.raises(Unsealable):
        Sealer(RotatingSecrets(NEW), "legacy-sessions").open("s1", token)


def _app(source: RotatingSecrets) -> App:
    app = App(conformance_settings())
    app.__dict__["state_secrets"] = source  # as Secrets Manager would hand them out
    return app


def test_a_session_moves_between_functions_either_side_of_a_rotation() -> None:
    # A warm function still seals with the old secret; a fresh one reads the new secret first.
    warm = _app(RotatingSecrets(OLD, after_refresh=[NEW, OLD]))
    fresh = _app(RotatingSecrets(NEW, after_refresh=[NEW, OLD]))
    client = LegacyClient(warm.transport())
    client.initialize()
    client.http = LegacyClient(fresh.transport()).http  # the next request lands elsewhere
    assert client.request("tools/list", {}).status == 200
    other = LegacyClient(fresh.transport())
    other.initialize()
    other.http = LegacyClient(warm.transport()).http
    assert other.request("tools/list", {}).status == 200
