"""The botocore data loader of our clients (`aws.loader`): botocore's answers, for less work.

What it must keep: the same service data for every service it does not trim, the operations
our adapters call for those it does, botocore's errors for unknown services, `AWS_DATA_PATH`
first, and endpoints from botocore's own data. What it must change: creating a client lists no
folder but the asked service's own, and loaded data is plain dicts.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import botocore.loaders
import botocore.session
import pytest
from botocore.exceptions import UnknownServiceError

from mcp_tasks_aws.aws.call_policies import POLICIES
from mcp_tasks_aws.aws.clients import Clients, use_cold_start_loader
from mcp_tasks_aws.aws.loader import MODELS, TRIMMED_OPERATIONS, ColdStartLoader


def plain_session() -> botocore.session.Session:
    session = botocore.session.get_session()
    session.set_config_variable("region", "us-east-1")
    session.set_credentials("testing", "testing")
    return session


def our_session() -> botocore.session.Session:
    session = plain_session()
    use_cold_start_loader(session)
    return session


def test_an_untrimmed_service_model_is_botocores_own() -> None:
    ours = ColdStartLoader().load_service_model("sqs", "service-2")
    theirs = botocore.loaders.Loader().load_service_model("sqs", "service-2")
    assert ours == theirs


def test_loaded_data_is_plain_dicts() -> None:
    model = ColdStartLoader().load_service_model("sqs", "service-2")
    assert type(model) is dict
    assert type(model["shapes"]) is dict
    assert not any(isinstance(shape, OrderedDict) for shape in model["shapes"].values())


@pytest.mark.parametrize("service", sorted(TRIMMED_OPERATIONS))
def test_a_trimmed_model_keeps_botocores_definitions_of_the_operations_we_call(
    service: str,
) -> None:
    ours = ColdStartLoader().load_service_model(service, "service-2")
    theirs = botocore.loaders.Loader().load_service_model(service, "service-2")
    assert set(TRIMMED_OPERATIONS[service]) <= set(ours["operations"])
    assert ours["metadata"] == theirs["metadata"]  # sdk-extras merged into both alike
    for name in TRIMMED_OPERATIONS[service]:
        mine, full = ours["operations"][name], theirs["operations"][name]
        assert mine == {k: v for k, v in full.items() if k != "documentation"}


def test_an_unknown_service_is_refused_as_botocore_refuses_it() -> None:
    with pytest.raises(UnknownServiceError) as refused:
        our_session().create_client("no-such-service")
    assert "dynamodb" in str(refused.value)  # the known names, listed as botocore lists them


def test_every_service_is_still_listed() -> None:
    listed = our_session().get_available_services()
    assert list(listed) == plain_session().get_available_services()
    assert len(listed) > 300


def test_creating_a_client_lists_no_folder_but_its_services(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def every_folder(self: Any, type_name: str) -> list[str]:
        raise AssertionError(f"listed every service folder for {type_name}")

    # botocore's loader lists every service for the service model and for the rule set.
    monkeypatch.setattr(botocore.loaders.Loader, "list_available_services", every_folder)
    for service in ("dynamodb", "lambda", "stepfunctions", "s3"):
        for policy in POLICIES:
            Clients(plain_session()).client(service, policy)


def test_clients_use_the_trimmed_models_and_botocores_endpoints() -> None:
    client = Clients(plain_session()).get("dynamodb")
    assert sorted(client.meta.service_model.operation_names) == sorted(
        {*TRIMMED_OPERATIONS["dynamodb"], "DescribeEndpoints"}
    )
    assert client.meta.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"
    lambdas = Clients(plain_session()).get("lambda")
    assert lambdas.meta.endpoint_url == "https://lambda.us-east-1.amazonaws.com"


def test_a_model_on_aws_data_path_comes_before_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (version,) = [p.name for p in (MODELS / "lambda").iterdir()]
    own = json.loads((MODELS / "lambda" / version / "service-2.json").read_text())
    own["operations"] = {}  # every operation we trimmed to, replaced by one of its own
    own["operations"]["Ping"] = {"name": "Ping", "http": {"method": "GET", "requestUri": "/"}}
    folder = tmp_path / "lambda" / version
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(own))
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    client = Clients(plain_session()).get("lambda")
    assert client.meta.service_model.operation_names == ["Ping"]
