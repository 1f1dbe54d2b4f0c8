"""Fixtures shared across the test tree (helpers live in the `support` package): the
conformance tools behind the real transport, clients for it, and moto resources from
template.yaml for the AWS adapter tests."""

from __future__ import annotations

import faulthandler
import functools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.client.cli.history import STATE_DIR_ENV
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.tools.registry import ToolSet
from support import tiers
from support.local_aws import template_resources
from support.mcp import SECRET, McpClient, conformance_settings


# Every `mock_aws` start gives boto3 a new default session, and botocore gives each session a
# new Loader, which parses each service's JSON model again for the session's first client of
# it (most of a client's ~35 ms). The models are read-only files of the installed botocore: in
# tests, one Loader per search path serves every session of the process.
class _SearchPaths(list[str]):
    """A shared Loader's search paths, each once (boto3 appends its own for each session)."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@functools.cache
def _shared_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
    paths = botocore.loaders.create_loader(search_path_string).search_paths
    return botocore.loaders.Loader(
        extra_search_paths=_SearchPaths(paths), include_default_search_paths=False
    )


botocore.session.create_loader = _shared_loader  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
def cli_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`mcp-tasks` remembers the tasks it starts (`client.cli.history`): in tests, in a
    temporary directory (subprocesses inherit it), never the user's own."""
    path = tmp_path_factory.mktemp("mcp-tasks-state")
    previous = os.environ.get(STATE_DIR_ENV)
    os.environ[STATE_DIR_ENV] = str(path)
    yield path
    if previous is None:
        os.environ.pop(STATE_DIR_ENV, None)
    else:
        os.environ[STATE_DIR_ENV] = previous


@pytest.fixture(scope="session")
def transport() -> HttpTransport:
    """The conformance tools behind the real transport, as `app.build_transport` assembles it."""
    return build_transport(conformance_settings())


@pytest.fixture
def client(transport: HttpTransport) -> McpClient:
    return McpClient(transport)


@pytest.fixture
def make_client() -> Callable[..., McpClient]:
    """A client for any ToolSet (server options such as `page_size` pass through)."""

    def make(toolset: ToolSet, **server_options: Any) -> McpClient:
        server = McpServer(toolset, state_codec=RequestStateCodec(SECRET), **server_options)
        return McpClient(HttpTransport(server, supported_versions=SUPPORTED_VERSIONS))

    return make


# -- moto resources only (the AWS adapters and the store contracts) ----------------------------


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAws]:
    with template_resources() as aws:
        yield aws


@pytest.fixture(scope="module")
def dynamodb(local_aws: LocalAws) -> Any:
    return boto3.client("dynamodb", region_name=REGION)


@pytest.fixture(scope="module")
def dynamo_store(local_aws: LocalAws, dynamodb: Any) -> DynamoTaskStore:
    return DynamoTaskStore(dynamodb, local_aws.table_name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tiers, read from what it uses (support.tiers), and hand the
    modules that wait to the workers first."""
    tiers.mark(items)
    tiers.waiting_modules_first(items)


GUARD = tiers.Guard()
GUARD.install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """While a test runs, what it starts must match its tiers (support.tiers.Guard)."""
    with GUARD.running_test(item):
        return (yield)


# A process whose tests have all ended must exit: a thread a test leaked (a tool still running,
# a server never stopped) that is not a daemon keeps an xdist worker, and so the whole run,
# alive. Past this bound after the session ends, every thread's stack is printed and the
# process exits with an error, so the leak is named instead of hanging CI.
EXIT_BOUND_S = 120


def pytest_unconfigure(config: pytest.Config) -> None:
    faulthandler.dump_traceback_later(EXIT_BOUND_S, exit=True, file=sys.__stderr__)
