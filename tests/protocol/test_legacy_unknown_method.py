"""A 2025-11-25 request for a method no era serves: -32601 whose message is cut as 2026-07-28's
is (the method name is the client's, and may be huge)."""

from __future__ import annotations

from support.legacy import LegacyClient, legacy_transport


def test_the_unknown_method_is_cut_in_the_error_message() -> None:
    client = LegacyClient(legacy_transport())
    client.initialize()
    method = "x/" + "y" * 5000
    response = client.request(method, {})
    assert response.status == 404
    error = response.json["error"]
    assert error["code"] == -32601
    assert error["message"] == f"Method not found: {method[:64]}"
