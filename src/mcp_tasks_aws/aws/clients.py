"""AWS SDK clients for the adapters: one botocore session, a client per service and call policy,
each made on first use.

Clients come from botocore directly (the same client objects `boto3.client(...)` returns,
without boto3's resource layer and s3transfer, which the adapters never use). Each is created
once per execution environment, on its first use: `server/discover`, lists and inline tools
never touch AWS, so they never pay for importing botocore and building clients (about 0.25 s on
a small machine); the first task operation pays it once, as init would have.

**Built from the call table.** Timeouts and retries belong to a botocore client, not to a
call, and whether a call may be resent depends on the call (`aws.call_policies`). So there is
a client per service *and policy*, configured from that policy, and the adapters hold a
`LazyClient` (`Clients.get`) that sends each call through the client its table row names: a
declared target's Invoke (RequestResponse) through a client that never retries, the worker's
queued Invoke (Event) through one that does. A call of the `ONCE` policy also gets its read
timeout from the deadline in force (`tools.deadline.seconds_left`), through botocore's
per-request `read_timeout` (botocore 1.40 and later; an older botocore, as a Lambda runtime
may bundle, keeps the policy's ceiling: the call is still sent once, and the inline deadline
or the function's timeout ends the wait).

That first creation is made cheaper: the session loads its data through `aws.loader` (our
trimmed service models, no scan of every service folder, plain JSON), and the collector is
paused while a client is built, and the first client of each service is frozen out of later
collections (`runtime.collector_paused`: botocore and a client are tens of thousands of
long-lived objects, which the collector would otherwise traverse again and again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.runtime import collector_paused

if TYPE_CHECKING:
    import botocore.session
    from botocore.config import Config

    from mcp_tasks_aws.aws.call_policies import CallPolicy

_CREATED: set[str] = set()
"""The services a client was created for in this process."""
_CALL_READ_TIMEOUT: ContextVar[float | None] = ContextVar("mcp_tasks_read_timeout", default=None)
"""The read timeout of the `ONCE` call being sent (set around it, read by botocore's hook)."""
MIN_READ_TIMEOUT_S: Final = 0.5
"""A call sent with (almost) no time left still gets this long to answer."""


def use_cold_start_loader(session: botocore.session.Session) -> None:
    """Make `session` load its data through `aws.loader` from now on (its `data_path`, i.e.
    `AWS_DATA_PATH`, still first)."""
    from mcp_tasks_aws.aws.loader import cold_start_loader

    data_path = session.get_config_variable("data_path")
    session.register_component("data_loader", cold_start_loader(data_path))


class Clients:
    """One botocore session and its clients, one per service and call policy, each created on
    first use (thread-safe).

    `session` is the botocore session to use (the embedded stack passes one with local
    credentials); by default the environment's, as on Lambda. Either way its data loader
    becomes `aws.loader`'s before the first client is made. `time_scale` multiplies every
    policy's timeouts (tests shrink them; 1 everywhere else), and `config` is merged into
    every client's (a test's endpoint that takes no host prefix).
    """

    def __init__(
        self,
        session: botocore.session.Session | None = None,
        *,
        time_scale: float = 1.0,
        config: Config | None = None,
    ) -> None:
        self._session = session
        self.time_scale = time_scale
        self._config = config
        self._clients: dict[tuple[str, str], Any] = {}
        self._calls: dict[str, LazyClient] = {}
        self._lock = threading.Lock()
        self._loader_set = False

    def get(self, service: str) -> Any:
        """The calls of `service`: each goes through the client of its `aws.call_policies`
        row (a `LazyClient`; no client is made before a call)."""
        calls = self._calls.get(service)
        if calls is None:
            calls = self._calls.setdefault(service, LazyClient(self, service))
        return calls

    def client(self, service: str, policy: CallPolicy) -> Any:
        """The botocore client of `service` configured for `policy` (made on first use)."""
        key = (service, policy.name)
        client = self._clients.get(key)
        if client is None:
            with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._create(service, policy)
                    self._clients[key] = client
        return client

    def read_timeout_s(self, policy: CallPolicy) -> float:
        """The read timeout of a call sent now under `policy`: its ceiling, or for a call that
        waits until the deadline, what is left of it (`tools.deadline.seconds_left`)."""
        ceiling = policy.read_timeout_s * self.time_scale
        if not policy.until_deadline:
            return ceiling
        from mcp_tasks_aws.tools.deadline import seconds_left

        left = seconds_left()
        return ceiling if left is None else min(ceiling, max(MIN_READ_TIMEOUT_S, left))

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

    def _create(self, service: str, policy: CallPolicy) -> Any:
        # The first client of a service in this process imports botocore and loads the
        # service's data: frozen afterwards (see `runtime.collector_paused`).
        first = service not in _CREATED
        _CREATED.add(service)
        with collector_paused(freeze=first):
            from botocore.config import Config

            session = self._botocore_session()
            scale = self.time_scale
            config = Config(
                connect_timeout=policy.connect_timeout_s * scale,
                read_timeout=policy.read_timeout_s * scale,
                retries={"mode": policy.retry_mode, "total_max_attempts": policy.max_attempts},
            )
            if self._config is not None:
                config = config.merge(self._config)
            client = session.create_client(service, config=config)
            if policy.until_deadline:
                event = f"before-call.{client.meta.service_model.service_id.hyphenize()}"
                client.meta.events.register(
                    event, _per_call_read_timeout, unique_id="mcp-tasks-per-call-read-timeout"
                )
            return client

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


def _per_call_read_timeout(context: dict[str, Any], **_: Any) -> None:
    """botocore's `before-call` hook: the read timeout chosen for this call, if any."""
    seconds = _CALL_READ_TIMEOUT.get()
    if seconds is not None:
        context["read_timeout"] = seconds


class LazyClient:
    """Stands in for a client of one service: each call goes through the client its row of
    `aws.call_policies` names, created on first use; any other attribute (`meta`,
    `exceptions`) is the `REPEATABLE` client's. An operation the table lacks cannot be
    called (AttributeError): its row must say first whether it may be resent."""

    def __init__(self, clients: Clients, service: str) -> None:
        self._clients = clients
        self._service = service

    def __getattr__(self, name: str) -> Any:
        from mcp_tasks_aws.aws import call_policies as table

        service = self._service
        operation = table.operation_of(service, name)
        if operation is None:
            client = self._clients.client(service, table.REPEATABLE)
            if name in client.meta.method_to_api_mapping:
                raise AttributeError(
                    f"{service}.{name} is not in aws.call_policies.CALLS: add its row first"
                )
            return getattr(client, name)
        policies = table.policies_of(service, operation)
        if len(policies) == 1:
            (policy,) = policies
            return self._method(name, policy)

        def routed(**params: Any) -> Any:
            return self._method(name, table.row_for(service, operation, params).policy)(**params)

        return routed

    def _method(self, name: str, policy: CallPolicy) -> Callable[..., Any]:
        method: Callable[..., Any] = getattr(self._clients.client(self._service, policy), name)
        if not policy.until_deadline:
            return method
        clients = self._clients

        def until_deadline(**params: Any) -> Any:
            token = _CALL_READ_TIMEOUT.set(clients.read_timeout_s(policy))
            try:
                return method(**params)
            finally:
                _CALL_READ_TIMEOUT.reset(token)

        return until_deadline
