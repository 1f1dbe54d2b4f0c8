"""AWS SDK clients for the adapters: one botocore session, each client made on first use.

Clients come from botocore directly (the same client objects `boto3.client(...)` returns,
without boto3's resource layer and s3transfer, which the adapters never use). Each is created
once per execution environment, on its first use: `server/discover`, lists and inline tools
never touch AWS, so they never pay for importing botocore and building clients (about 0.25 s on
a small machine); the first task operation pays it once, as init would have.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import botocore.session


class Clients:
    """One botocore session and its clients, each created on first use (thread-safe).

    `session` is the botocore session to use (the embedded stack passes one with local
    credentials); by default the environment's, as on Lambda.
    """

    def __init__(self, session: botocore.session.Session | None = None) -> None:
        self._session = session
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            with self._lock:
                client = self._clients.get(service)
                if client is None:
                    client = self._create(service)
                    self._clients[service] = client
        return client

    def credentials(self) -> Any:
        """The session's credentials (SigV4 signing of HTTP targets), None if it has none."""
        with self._lock:
            return self._botocore_session().get_credentials()

    def _botocore_session(self) -> botocore.session.Session:
        import botocore.session

        if self._session is None:
            self._session = botocore.session.get_session()
        return self._session

    def _create(self, service: str) -> Any:
        from botocore.config import Config

        session = self._botocore_session()
        # Fail fast inside a request; standard mode keeps botocore's retries with backoff.
        config = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard"})
        return session.create_client(service, config=config)


class LazyClient:
    """Stands in for a client: the first attribute access creates the real one."""

    def __init__(self, clients: Clients, service: str) -> None:
        self._clients = clients
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.get(self._service), name)
