"""The one composition root: every part a function needs, built from an explicit `Settings`.

The three Lambda handlers, the embedded stack and the tests all build their parts here, each
from a `Settings` value (never by reading `os.environ` themselves), so what runs locally is what
runs deployed. Parts are made on first use: an API function serving `server/discover` never
builds a task store, and no AWS client exists until a task operation needs one (see
`aws.clients`); the 2025-11-25 side of the endpoint is built on the first legacy message.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mcp_tasks_aws.aws.clients import Clients, LazyClient
from mcp_tasks_aws.aws.dynamodb import DynamoChangeFeed, DynamoTaskStore, room_for_result
from mcp_tasks_aws.aws.lambda_legs import LambdaDirectLegs
from mcp_tasks_aws.aws.s3 import S3ResultStore
from mcp_tasks_aws.aws.stepfunctions import StepFunctionsRunner
from mcp_tasks_aws.config import Settings, load_toolset
from mcp_tasks_aws.protocol.jsonrpc import Message
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SecretSource, StaticSecrets
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpTransport, LegacyGate, Served
from mcp_tasks_aws.runtime import init_phase
from mcp_tasks_aws.server.handles import TaskHandles
from mcp_tasks_aws.server.listen import Listener
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.server.tasks import TasksEndpoint
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.registry import ToolSet

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_stepfunctions.client import SFNClient

    from mcp_tasks_aws.edge.gate import Edge
    from mcp_tasks_aws.server.legacy.sessions import LegacySessionStore
    from mcp_tasks_aws.tasks.durable import DurableBody
    from mcp_tasks_aws.tasks.legs import LegRunner
    from mcp_tasks_aws.tasks.ports import (
        ChangeFeed,
        DirectLegs,
        ResultStore,
        Runner,
        TaskStore,
        Workflows,
    )
    from mcp_tasks_aws.tasks.workflow import DoorKeys, WorkflowDoors


class App:
    """The parts of one deployment, for one function (each function builds its own)."""

    def __init__(
        self,
        settings: Settings,
        *,
        clients: Clients | None = None,
        toolset: ToolSet | None = None,
        run_adapters: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.clients = clients or Clients()
        if run_adapters is not None:  # the embedded stack's stand-ins (`local.durable`)
            self.__dict__["run_adapters"] = dict(run_adapters)
        if toolset is not None:
            self.__dict__["toolset"] = self._bound(toolset)

    @cached_property
    def toolset(self) -> ToolSet:
        return self._bound(load_toolset(self.settings.tools_module))

    def _bound(self, toolset: ToolSet) -> ToolSet:
        """`toolset` with its declared tools (if any) calling AWS through this app's clients;
        tools bound already (the embedded stack binds its local targets first) stay so."""
        if not any(spec.raw_arguments for spec in toolset.tools.values()):
            return toolset  # no declared tool: targets are never imported
        from mcp_tasks_aws.aws.targets import AwsTargets
        from mcp_tasks_aws.targets.tools import bindings_of

        for binding in bindings_of(toolset):
            binding.bind_if_unbound(lambda: AwsTargets(self.clients))
        return toolset

    # -- AWS adapters (tasks) -----------------------------------------------------------------

    @property
    def has_tasks(self) -> bool:
        """Whether a task table is configured (else the server serves inline tools only)."""
        return bool(self.settings.task_table)

    def _require_tasks(self) -> None:
        if not (self.settings.task_table and self.settings.state_machine_arn):
            raise RuntimeError("MCP_TASKS_TABLE and MCP_TASKS_STATE_MACHINE_ARN must be set")

    @cached_property
    def store(self) -> TaskStore:
        self._require_tasks()
        client = cast("DynamoDBClient", LazyClient(self.clients, "dynamodb"))
        return DynamoTaskStore(client, self.settings.task_table)

    @cached_property
    def change_feed(self) -> ChangeFeed:
        self._require_tasks()
        client = cast("DynamoDBClient", LazyClient(self.clients, "dynamodb"))
        return DynamoChangeFeed(client, self.settings.task_table)

    @cached_property
    def runner(self) -> Runner:
        self._require_tasks()
        client = cast("SFNClient", LazyClient(self.clients, "stepfunctions"))
        return StepFunctionsRunner(client, self.settings.state_machine_arn)

    @cached_property
    def direct_legs(self) -> DirectLegs | None:
        """First legs run by invoking the worker asynchronously (None: Step Functions runs all)."""
        if not self.settings.worker_function:
            return None
        client = cast("LambdaClient", LazyClient(self.clients, "lambda"))
        return LambdaDirectLegs(client, self.settings.worker_function)

    @cached_property
    def workflows(self) -> Workflows:
        """Declared workflows' executions (managed Standard machines; `tasks.workflow`), made
        on first use: a server of code tools never imports the managed-target code."""

        def make() -> Workflows:
            from mcp_tasks_aws.aws.targets import StepFunctionsWorkflows

            return StepFunctionsWorkflows(
                cast("SFNClient", LazyClient(self.clients, "stepfunctions"))
            )

        return cast("Workflows", MadeOnFirstUse(make))

    @cached_property
    def run_adapters(self) -> dict[str, Any]:
        """The ports of runs beyond the task state machine, direct legs and declared
        workflows, by run name (`tasks.runs.base.RunPorts.adapters`): the durable function's
        executions (`durable`), where one is configured. A new run's adapter is made here.
        Its client is made on its first call, like the others."""
        if not self.settings.durable_function:
            return {}
        from mcp_tasks_aws.aws.durable import LambdaDurableExecutions

        client = cast("LambdaClient", LazyClient(self.clients, "lambda"))
        return {"durable": LambdaDurableExecutions(client, self.settings.durable_function)}

    @cached_property
    def door_keys(self) -> DoorKeys:
        """Declared workflows' per-task capabilities, from the state secrets (read on first
        use: a server that starts no workflow never reads it for them)."""
        from mcp_tasks_aws.tasks.workflow import DoorKeys

        return DoorKeys(self.state_secrets, audience=self.settings.deployment_id)

    def workflow_doors(self) -> WorkflowDoors:
        """What the AskFunction runs: a workflow's questions and reports to its task."""
        from mcp_tasks_aws.tasks.workflow import WorkflowDoors

        return WorkflowDoors(self.store, self.door_keys, self.workflows)

    @cached_property
    def results(self) -> ResultStore | None:
        if not self.settings.result_bucket:
            return None
        client = cast("S3Client", LazyClient(self.clients, "s3"))
        return S3ResultStore(client, self.settings.result_bucket)

    @cached_property
    def legacy_sessions(self) -> LegacySessionStore:
        """Where 2025-11-25 sessions keep what changes (log level, end, calls waiting for
        answers): the task table; without one, this process's memory (then a `DELETE` ends a
        session only for this process)."""
        if self.has_tasks:
            from mcp_tasks_aws.aws.sessions import DynamoLegacySessionStore

            client = cast("DynamoDBClient", LazyClient(self.clients, "dynamodb"))
            return DynamoLegacySessionStore(client, self.settings.task_table)
        from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore

        return InMemoryLegacySessionStore()

    # -- use cases ----------------------------------------------------------------------------

    @cached_property
    def tasks(self) -> TaskService | None:
        """The task use cases, or None when no task table is configured."""
        if not self.has_tasks:
            return None
        return TaskService(
            self.store,
            self.runner,
            direct_legs=self.direct_legs,
            results=self.results,
            workflows=self.workflows,
            door_keys=self.door_keys,
            run_adapters=self.run_adapters,
            default_ttl_ms=self.settings.default_ttl_ms,
            max_ttl_ms=self.settings.max_ttl_ms,
            default_poll_interval_ms=self.settings.poll_interval_ms,
            max_poll_interval_ms=self.settings.max_poll_interval_ms,
        )

    def durable_body(self) -> DurableBody:
        """What the durable function runs: a durable tool's task, in its execution."""
        from mcp_tasks_aws.tasks.durable import DurableBody  # the durable function's path

        return DurableBody(self.leg_runner())

    def leg_runner(self) -> LegRunner:
        """What the worker function runs: one leg of a task."""
        from mcp_tasks_aws.tasks.legs import LegRunner  # the worker's path, not the API's

        return LegRunner(
            self.store,
            self.runner,
            self.toolset,
            results=self.results,
            result_room=room_for_result,
            list_changed=self.change_feed.bump,
        )

    # -- SnapStart: priming before the snapshot, fresh state after each restore ----------------

    def prime(self, transport: HttpTransport | None = None) -> None:
        """Before a SnapStart snapshot: build what the first requests would otherwise build in
        every new environment, and nothing secret or particular to one (`runtime`).

        - the tool set with its schemas and validators, and the server (`transport`: one
          `server/discover` and one `tools/list` through it, warming the request path);
        - the modules a first task request imports (the task result models);
        - botocore and this function's service data, and its request path, on throwaway
          clients whose calls are answered locally (`Clients.prime`): no network, no
          credentials; our own clients are made from the warmed session on first use.

        No secret is read (the request-state secret is read on first use, after the restore),
        no AWS call is made and no client is kept.
        """
        with init_phase():
            self.toolset.check()
            if transport is not None:
                for method in ("server/discover", "tools/list"):
                    transport.handle(_priming_request(method))
            if self.has_tasks:
                import mcp_tasks_aws.server.task_results  # noqa: F401 - the first task answer's
            self.clients.prime(self._priming_calls())

    def _priming_calls(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        if not self.has_tasks:
            return {}
        key = {"taskId": {"S": "0" * 32}}
        update = {
            "TableName": "priming",
            "Key": key,
            "UpdateExpression": "SET #s = :s",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":s": {"S": "working"}},
        }
        calls: dict[str, list[tuple[str, dict[str, Any]]]] = {
            "dynamodb": [
                ("get_item", {"TableName": "priming", "Key": key, "ConsistentRead": True}),
                ("put_item", {"TableName": "priming", "Item": key}),
                ("update_item", update),
                ("batch_get_item", {"RequestItems": {"priming": {"Keys": [key]}}}),
            ],
            "stepfunctions": [("send_task_success", {"taskToken": "priming", "output": "{}"})],
        }
        if self.settings.worker_function:
            invoke = {"FunctionName": "priming", "InvocationType": "Event", "Payload": b"{}"}
            calls["lambda"] = [("invoke", invoke)]
        return calls

    def after_restore(self, edge: Edge | None = None) -> None:
        """After a SnapStart restore, before the first request: drop what restored copies must
        not share. AWS clients (their connection pools and credentials: none were made before
        the snapshot, this is a guard), the request-state secret's cached value and age, and
        the OAuth issuer's keys (`edge`). `runtime` re-seeds `random` before this."""
        self.clients.reset()
        forget = getattr(self.state_secrets, "forget", None)
        if forget is not None:
            forget()
        if edge is not None:
            edge.after_restore()

    # -- the MCP endpoint ---------------------------------------------------------------------

    @cached_property
    def state_secrets(self) -> SecretSource:
        return state_secrets(self.settings, self.clients)

    @cached_property
    def server(self) -> McpServer:
        secrets = self.state_secrets
        tasks = self.tasks
        feed = self.change_feed if self.has_tasks else None
        listener = Listener(
            tasks=tasks,
            feed=feed,
            has_prompts=bool(self.toolset.prompts),
            window_ms=self.settings.listen_window_ms,
            poll_ms=self.settings.listen_poll_ms,
        )
        codec = RequestStateCodec(secrets, audience=self.settings.deployment_id)
        handles = None
        if tasks is not None:
            handles = TaskHandles(
                self.toolset,
                tasks,
                state_codec=codec,
                enabled=self.settings.task_handles,
                prefix=self.settings.handle_tool_prefix,
                budget_ms=self.settings.inline_budget_ms,
                poll_ms=self.settings.listen_poll_ms,
            )
        return McpServer(
            self.toolset,
            state_codec=codec,
            page_size=self.settings.page_size,
            list_ttl_ms=self.settings.list_ttl_ms,
            tasks=TasksEndpoint(tasks) if tasks is not None else None,
            listener=listener,
            list_changed=feed.bump if feed is not None else None,
            handles=handles,
        )

    def legacy(self) -> LegacyGate:
        """The 2025-11-25 side of the endpoint: registers its methods on `server` (with seed
        000's tasks on the same task service, when a task table is configured)."""
        from mcp_tasks_aws.server.legacy.endpoint import install_legacy

        return install_legacy(
            self.server,
            # The state secrets (read from Secrets Manager when deployed, on first use): sealed
            # with the current one, opened under the previous one too during a rotation.
            secret=self.state_secrets,
            sessions=self.legacy_sessions,
            tasks=self.tasks,
            deployment_id=self.settings.deployment_id,
            session_ttl_seconds=self.settings.session_ttl_seconds,
            window_ms=self.settings.listen_window_ms,
            poll_ms=self.settings.listen_poll_ms,
            page_size=self.settings.page_size,
        )

    def edge(self, transport: HttpTransport) -> Edge:
        """The HTTP edge for `settings.auth` in front of `transport`, knowing the tool set's
        scopes (what the API handler builds once per execution environment).

        Built here, not by the edge from `Settings`: `config` carries the edge's settings, so
        the edge must not import `config` back.
        """
        from mcp_tasks_aws.edge.gate import build_edge

        scopes = {scope for spec in self.toolset.tools.values() for scope in spec.scopes}
        return build_edge(self.settings.auth, transport.handle, scopes)

    def transport(self, on_request: Callable[[str, Any], None] | None = None) -> HttpTransport:
        return HttpTransport(
            self.server,
            allowed_origins=self.settings.allowed_origins,
            max_body_bytes=self.settings.max_body_bytes,
            supported_versions=SUPPORTED_VERSIONS,
            on_request=on_request,
            legacy=LazyLegacyGate(self.legacy),
        )


class MadeOnFirstUse:
    """Stands in for an adapter: the first attribute access makes the real one (once)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = self._make()
        return getattr(self._made, name)


def _priming_request(method: str) -> HttpRequest:
    """A 2026-07-28 request with no arguments, as a client without capabilities sends it."""
    from mcp_tasks_aws.protocol.names import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
    from mcp_tasks_aws.server.methods import PROTOCOL_VERSION

    meta = {PROTOCOL_VERSION_KEY: PROTOCOL_VERSION, CLIENT_CAPABILITIES_KEY: {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": method,
    }
    return HttpRequest(method="POST", headers=headers, body=json.dumps(body).encode())


class LazyLegacyGate:
    """The legacy side, built (and its methods registered) on the first legacy message: a
    function serving only 2026-07-28 clients never imports it (cold start)."""

    def __init__(self, build: Callable[[], LegacyGate]) -> None:
        self._build = build
        self._gate: LegacyGate | None = None
        self._lock = threading.Lock()

    def _get(self) -> LegacyGate:
        if self._gate is None:
            with self._lock:
                if self._gate is None:
                    self._gate = self._build()
        return self._gate

    def knows(self, method: str) -> bool:
        return self._get().knows(method)

    def post(self, http: HttpRequest, message: Message) -> Served | None:
        return self._get().post(http, message)

    def resume(self, http: HttpRequest, last_event_id: str) -> Iterator[Any]:
        return self._get().resume(http, last_event_id)

    def end(self, http: HttpRequest) -> None:
        self._get().end(http)


def state_secrets(settings: Settings, clients: Clients | None = None) -> SecretSource:
    """Deployed: the Secrets Manager secret, read on first use. Locally: the given value."""
    if settings.state_secret_arn:
        from mcp_tasks_aws.aws.secrets import SecretsManagerSecrets

        shared = clients or Clients()
        return SecretsManagerSecrets(
            settings.state_secret_arn, lambda: shared.get("secretsmanager")
        )
    if not settings.state_secret:
        raise RuntimeError(
            "Set MCP_TASKS_STATE_SECRET_ARN (deployed) or MCP_TASKS_STATE_SECRET (32+ random "
            "bytes, local)"
        )
    return StaticSecrets(settings.state_secret)


H = TypeVar("H")


def handler_from_env(
    make_handler: Callable[[App], H], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module `__getattr__` for a handler module: reading `handler` builds it once.

    Deployed, `make_handler` gets an App from the environment's settings when the runtime
    first reads `handler` (or `app`); both then become plain module attributes, so later
    reads cost nothing. The build is part of init (`runtime.init_phase`).
    """

    def module_getattr(name: str) -> Any:
        if name not in ("handler", "app"):
            raise AttributeError(name)
        with init_phase():
            app = App(Settings.from_env())
            namespace["handler"] = make_handler(app)
            namespace["app"] = app
        return namespace[name]

    return module_getattr


def build_transport(settings: Settings, **options: Any) -> HttpTransport:
    """The MCP endpoint for `settings` (a shorthand for `App(settings).transport(...)`)."""
    return App(settings).transport(**options)
