"""Building the task service and the worker's leg runner from settings, on boto3.

Clients come from one botocore session and are created once per execution environment (the
Lambda init phase). The S3 client is created only when a result is large enough to need it.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.config import Config

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.aws.s3 import S3ResultStore
from mcp_tasks_aws.aws.stepfunctions import StepFunctionsRunner
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.worker import LegRunner
from mcp_tasks_aws.tools.registry import ToolSet

# Fail fast inside a request: the client retries on its side (standard mode keeps retries).
_CLIENT_CONFIG = Config(connect_timeout=2, read_timeout=10, retries={"mode": "standard"})


class LazyResultStore:
    """An S3ResultStore whose client is made on first use."""

    def __init__(self, session: boto3.Session, bucket: str) -> None:
        self._session = session
        self._bucket = bucket
        self._store: S3ResultStore | None = None

    def _get_store(self) -> S3ResultStore:
        if self._store is None:
            self._store = S3ResultStore(
                self._session.client("s3", config=_CLIENT_CONFIG), self._bucket
            )
        return self._store

    def put(self, task_id: str, body: bytes) -> str:
        return self._get_store().put(task_id, body)

    def get(self, ref: str) -> bytes:
        return self._get_store().get(ref)


class AwsParts:
    """The adapters for one set of settings."""

    def __init__(self, settings: Settings, session: boto3.Session | None = None) -> None:
        if not (settings.task_table and settings.state_machine_arn):
            raise RuntimeError("MCP_TASKS_TABLE and MCP_TASKS_STATE_MACHINE_ARN must be set")
        session = session or boto3.Session()
        self.settings = settings
        self.store = DynamoTaskStore(
            session.client("dynamodb", config=_CLIENT_CONFIG), settings.task_table
        )
        self.runner = StepFunctionsRunner(
            session.client("stepfunctions", config=_CLIENT_CONFIG), settings.state_machine_arn
        )
        self.results = (
            LazyResultStore(session, settings.result_bucket) if settings.result_bucket else None
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
        return LegRunner(self.store, self.runner, toolset, results=self.results)


def task_service_from(settings: Settings) -> TaskService | None:
    """The task backend, or None when no task table is configured (inline tools only)."""
    if not settings.task_table:
        return None
    return AwsParts(settings).task_service()
