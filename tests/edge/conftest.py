"""Fixtures of the edge's token tests: an issuer with one key, a test clock and a verifier
reading that issuer's keys (helpers live in support.oauth)."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.edge.jwks import JwksCache
from mcp_tasks_aws.edge.tokens import TokenVerifier
from support.clock import Clock
from support.oauth import ISSUER, JWKS_URI, RESOURCE, Issuer


@pytest.fixture
def issuer() -> Issuer:
    found = Issuer()
    found.add_key("k1")
    return found


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def verifier(issuer: Issuer, clock: Clock) -> TokenVerifier:
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch, clock=clock)
    return TokenVerifier(issuer=ISSUER, audiences=[RESOURCE], keys=keys)
