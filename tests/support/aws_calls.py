"""Counting the AWS calls a request costs: shared by the cost tests of both eras."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.client import BaseClient


@contextmanager
def aws_calls() -> Iterator[list[str]]:
    """Every AWS operation the current thread calls inside the block, as service:Operation."""
    calls: list[str] = []
    original = BaseClient._make_api_call
    me = threading.get_ident()

    def counting(self: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
        if threading.get_ident() == me:
            calls.append(f"{self.meta.service_model.service_name}:{operation_name}")
        return original(self, operation_name, api_params)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseClient, "_make_api_call", counting)
        yield calls
