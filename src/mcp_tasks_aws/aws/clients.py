"""Building the task service and the worker's leg runner from settings, on AWS SDK clients.

Clients come from one botocore session (the same client objects `boto3.client(...)` returns,
without boto3's resource layer and s3transfer, which these adapters never use). Each client is
created once per execution environment, on its first use: `server/discover`, lists and inline
tools never touch AWS, so they never pay for importing botocore and building clients (about
0.25 s on a small machine); the first task operation pays it once, as init would have.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, cast

from mcp_tasks_aws.aws.dynamodb import DynamoChangeFeed, DynamoTaskStore
from mcp_tasks_aws.aws.stepfunctions import StepFunctionsRunner
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.service import TaskService

if TYPE_CHECKING:
    import botocore.session
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_stepfunctions.client import SFNClient

    from mcp_tasks_aws.aws.s3 import S3ResultStore
    from mcp_tasks_aws.tasks.worker import LegRunner
    from mcp_tasks_aws.tools.registry import ToolSet


class Clients:
    """One botocore session and its clients, each created on first use (thread-safe)."""

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

    def _create(self, service: str) -> Any:
        import botocore.session
        from botocore.config import Config

        if self._session is None:
            self._session = botocore.session.get_session()
        # Fail fast inside a request; standard mode keeps botocore's retries with backoff.
        config = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard"})
        return self._session.create_client(service, config=config)


class LazyClient:
    """Stands in for a client: the first attribute access creates the real one."""

    def __init__(self, clients: Clients, service: str) -> None:
        self._clients = clients
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.get(self._service), name)


class LazyResultStore:
    """An S3ResultStore whose client is made on first use."""

    def __init__(self, clients: Clients, bucket: str) -> None:
        self._clients = clients
        self._bucket = bucket
        self._store: S3ResultStore | None = None

    def _get_store(self) -> S3ResultStore:
        if self._store is None:
            from mcp_tasks_aws.aws.s3 import S3ResultStore

            self._store = S3ResultStore(self._clients.get("s3"), self._bucket)
        return self._store

    def put(self, task_id: str, body: bytes) -> str:
        return self._get_store().put(task_id, body)

    def get(self, ref: str) -> bytes:
        return self._get_store().get(ref)


class AwsParts:
    """The adapters for one set of settings."""

    def __init__(self, settings: Settings, session: botocore.session.Session | None = None) -> None:
        if not (settings.task_table and settings.state_machine_arn):
            raise RuntimeError("MCP_TASKS_TABLE and MCP_TASKS_STATE_MACHINE_ARN must be set")
        self.settings = settings
        self.clients = Clients(session)
        self.store = DynamoTaskStore(
            cast("DynamoDBClient", LazyClient(self.clients, "dynamodb")), settings.task_table
        )
        self.change_feed = DynamoChangeFeed(
            cast("DynamoDBClient", LazyClient(self.clients, "dynamodb")), settings.task_table
        )
        self.runner = StepFunctionsRunner(
            cast("SFNClient", LazyClient(self.clients, "stepfunctions")),
            settings.state_machine_arn,
        )
        self.results = (
            LazyResultStore(self.clients, settings.result_bucket)
            if settings.result_bucket
            else None
        )

    def resolve_result(self, record: TaskRecord) -> dict[str, Any] | None:
        if record.result_ref is None or self.results is None:
            return record.result
        loaded: dict[str, Any] = json.loads(self.results.get(record.result_ref))
        return loaded

    def task_service(self) -> TaskService:
        return TaskService(
            self.store,
            self.runner,
            default_ttl_ms=self.settings.default_ttl_ms,
            default_poll_interval_ms=self.settings.poll_interval_ms,
            resolve_result=self.resolve_result,
        )

    def leg_runner(self, toolset: ToolSet) -> LegRunner:
        from mcp_tasks_aws.tasks.worker import LegRunner  # the worker's path, not the API's

        return LegRunner(
            self.store,
            self.runner,
            toolset,
            results=self.results,
            list_changed=self.change_feed.bump,
        )


def task_parts_from(settings: Settings) -> tuple[TaskService | None, DynamoChangeFeed | None]:
    """The task backend and change feed, or Nones when no task table is configured."""
    if not settings.task_table:
        return None, None
    parts = AwsParts(settings)
    return parts.task_service(), parts.change_feed
