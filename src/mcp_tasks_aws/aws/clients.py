"""AWS SDK clients for the adapters: one botocore session, each client made on first use.

Clients come from botocore directly (the same client objects `boto3.client(...)` returns,
without boto3's resource layer and s3transfer, which the adapters never use). Each is created
once per execution environment, on its first use: `server/discover`, lists and inline tools
never touch AWS, so they never pay for importing botocore and building clients (about 0.25 s on
a small machine); the first task operation pays it once, as init would have.

That first creation is made cheaper: the session loads its data through `aws.loader` (our
trimmed service models, no scan of every service folder, plain JSON), and the collector is
paused while a client is built, and the first client of each service is frozen out of later
collections (`runtime.collector_paused`: botocore and a client are tens of thousands of
long-lived objects, which the collector would otherwise traverse again and again).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.runtime import collector_paused

if TYPE_CHECKING:
    import botocore.session

_CREATED: set[str] = set()
"""The services a client was created for in this process."""


def use_cold_start_loader(session: botocore.session.Session) -> None:
    """Make `session` load its data through `aws.loader` from now on (its `data_path`, i.e.
    `AWS_DATA_PATH`, still first)."""
    from mcp_tasks_aws.aws.loader import cold_start_loader

    data_path = session.get_config_variable("data_path")
    session.register_component("data_loader", cold_start_loader(data_path))


class Clients:
    """One botocore session and its clients, each created on first use (thread-safe).

    `session` is the botocore session to use (the embedded stack passes one with local
    credentials); by default the environment's, as on Lambda. Either way its data loader
    becomes `aws.loader`'s before the first client is made.
    """

    def __init__(self, session: botocore.session.Session | None = None) -> None:
        self._session = session
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._loader_set = False

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
        """The session, made on first use with its data loaded through `aws.loader` (under
        the lock)."""
        import botocore.session

        if self._session is None:
            self._session = botocore.session.get_session()
        if not self._loader_set:
            use_cold_start_loader(self._session)
            self._loader_set = True
        return self._session

    def _create(self, service: str) -> Any:
        # The first client of a service in this process imports botocore and loads the
        # service's data: frozen afterwards (see `runtime.collector_paused`).
        first = service not in _CREATED
        _CREATED.add(service)
        with collector_paused(freeze=first):
            from botocore.config import Config

            session = self._botocore_session()
            # Fail fast inside a request; standard mode keeps botocore's retries with backoff.
            config = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard"})
            return session.create_client(service, config=config)

    def reset(self) -> None:
        """Forget every client made so far: the next use makes a new one (after a SnapStart
        restore, so that no connection or credential is shared between restored copies)."""
        with self._lock:
            self._clients.clear()

    def prime(self, calls: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
        """Warm what the first call of each service pays beyond creating its client: botocore's
        request path (serialising, signing, parsing; the modules it imports on first use) and
        this session's loaded data, by making `calls` ({service: [(method, params)]}) on
        throwaway clients of this session. Those clients have placeholder credentials and every
        call is answered here, empty, before it is sent: no network, no credentials read, no
        client kept (what a SnapStart snapshot may hold). Our own clients are made on first
        use, as always, from the warmed session."""
        with self._lock:
            from botocore.awsrequest import AWSResponse

            session = self._botocore_session()
        region = session.get_config_variable("region") or "us-east-1"

        headers: Any = {"x-amzn-requestid": "priming"}

        def answer(request: Any, event_name: str, **_: Any) -> Any:
            status = 202 if event_name.endswith(".Invoke") else 200
            return AWSResponse(request.url, status, headers, _Empty())

        for service, service_calls in calls.items():
            with collector_paused(freeze=True):
                client = session.create_client(
                    service,
                    region_name=region,
                    aws_access_key_id="priming",
                    aws_secret_access_key="priming",  # noqa: S106 - a placeholder, never sent
                )
                client.meta.events.register("before-send", answer)
                for method, params in service_calls:
                    getattr(client, method)(**params)
                client.close()


class _Empty:
    """The raw body of a priming answer: `{}` for JSON protocols (an empty Invoke reads it
    as its payload)."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield b"{}"


class LazyClient:
    """Stands in for a client: the first attribute access creates the real one."""

    def __init__(self, clients: Clients, service: str) -> None:
        self._clients = clients
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.get(self._service), name)
