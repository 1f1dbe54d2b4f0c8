"""AWS endpoints of a test's own on 127.0.0.1, which our clients reach through
`AWS_ENDPOINT_URL`: a server answering as AWS would on a bad day (late, or refusing a resent
copy), and a botocore session with placeholder credentials to call it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

import botocore.session
import pytest


@contextmanager
def serving(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`server` serving on its thread, as every client's endpoint, for the block (its URL)."""
    # `shutdown` waits for the loop to look: every 20 ms, not the default 0.5 s.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


def endpoint_session() -> botocore.session.Session:
    """A session in us-east-1 with placeholder credentials (the endpoint checks none)."""
    session = botocore.session.get_session()
    session.set_config_variable("region", "us-east-1")
    session.set_credentials("AKIDEXAMPLE", "secret")
    return session
