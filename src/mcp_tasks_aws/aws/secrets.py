"""The request-state secret from Secrets Manager, read on first use and cached.

Deployed, the API function gets the secret's ARN, never its value (an environment variable is
readable by anyone allowed `lambda:GetFunctionConfiguration`). The value is read the first
time a request needs it (a multi round-trip `requestState` to seal or open), so cold starts of
requests that never need it pay nothing, and kept for `max_age_s`.

Rotation: a new value becomes `AWSCURRENT` and the old one `AWSPREVIOUS`. Functions keep
sealing with the value they read until their cache ages out, so for a while both are in use.
When a state arrives sealed under a key this function does not know, it reads again, this
time both versions (at most once per `refresh_every_s`, so forged key ids cannot turn into a
stream of reads); states sealed under either are accepted.

A failed read with a value cached keeps that value (and logs); with nothing cached it raises,
and the request answers an internal error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp_tasks_aws.aws.errors import client_error_code

logger = logging.getLogger(__name__)


class SecretsManagerSecrets:
    """A `SecretSource` (see `protocol.request_state`) backed by one Secrets Manager secret;
    `client_factory` gives its client (the app's shared one), called on the first read."""

    def __init__(
        self,
        secret_id: str,
        client_factory: Callable[[], Any],
        *,
        max_age_s: float = 600,
        refresh_every_s: float = 30,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.secret_id = secret_id
        self._client_factory = client_factory
        self.client: Any = None
        self._max_age_s = max_age_s
        self._refresh_every_s = refresh_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: list[bytes] = []
        self._read_at: float | None = None
        # Set by the first refresh: from then on every read includes AWSPREVIOUS.
        self._with_previous = False

    def secrets(self, *, refresh: bool = False) -> Sequence[bytes]:
        with self._lock:
            age = float("inf") if self._read_at is None else self._clock() - self._read_at
            expired = age > self._max_age_s
            may_refresh = refresh and (not self._with_previous or age > self._refresh_every_s)
            if refresh:
                self._with_previous = True
            if expired or may_refresh:
                self._read()
            return list(self._cached)

    def forget(self) -> None:
        """Drop the cached values and the client: the next use reads the secret again (after
        a SnapStart restore: a value read before the snapshot would be shared by every
        restored copy, with an age measured on a clock that stood still meanwhile)."""
        with self._lock:
            self._cached = []
            self._read_at = None
            self.client = None

    def _read(self) -> None:
        try:
            if self.client is None:
                self.client = self._client_factory()
            values = [self._value("AWSCURRENT")]
            if self._with_previous:
                previous = self._value("AWSPREVIOUS", missing_ok=True)
                if previous is not None and previous != values[0]:
                    values.append(previous)
        except Exception:
            if not self._cached:
                raise
            logger.warning("could not read the request-state secret; keeping the cached one")
            self._read_at = self._clock()
            return
        self._cached = [v for v in values if v is not None]
        self._read_at = self._clock()

    def _value(self, stage: str, *, missing_ok: bool = False) -> bytes | None:
        try:
            response = self.client.get_secret_value(SecretId=self.secret_id, VersionStage=stage)
        except Exception as exc:
            if missing_ok and client_error_code(exc) == "ResourceNotFoundException":
                return None  # never rotated: there is no previous version
            raise
        if "SecretString" in response:
            return str(response["SecretString"]).encode()
        return bytes(response["SecretBinary"])
