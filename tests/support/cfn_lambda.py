"""Test-only CloudFormation providers for Lambda (support.cfn_engine), through Lambda's API
on moto.

- `AWS::Lambda::Function`: moto's, plus layers and properties dropped on update (`Function`).
- `AWS::Lambda::Version` publishes a version of the function's configuration as it is when
  the version resource is created (moto's model has neither the `Version` attribute nor the
  description). As `PublishVersion` does, it returns the latest version when nothing changed
  since it was published. Every property is create-only: a changed description replaces the
  resource, i.e. publishes again, and the replaced version is deleted at cleanup (unless an
  alias still points at it: Lambda refuses that, so does this provider).
  `publish_version_as_lambda_does` replaces moto's numbering, which reuses the number of a
  deleted version (Lambda never does: numbers only grow).
- `AWS::Lambda::Alias` (moto has no model): points `Name` at `FunctionVersion`, moved in
  place when the version changes.
- `AWS::Lambda::Permission` (moto's cannot be deleted): a statement whose id is the
  resource's physical id, on the function or alias `FunctionName` names. moto keeps one
  policy for a function and all its versions and aliases; each statement's `Resource`
  still says which it was granted on.
- `AWS::Lambda::EventInvokeConfig` (moto has no model). moto keeps one such configuration
  per function, whatever the qualifier.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from moto.awslambda.models import LambdaFunction, LambdaStorage
from moto.core.common_models import CloudFormationModel

from support.cfn_model import ProvidedResource, client, present


def publish_version_as_lambda_does(
    self: LambdaStorage, name_or_arn: str, description: str = ""
) -> LambdaFunction | None:
    """moto's `LambdaStorage.publish_version`, numbering as Lambda does: one past the highest
    number the function ever had."""
    function = self.get_function_by_name_or_arn_forbid_qualifier(name_or_arn)
    entry = self._functions[function.function_name]
    versions = entry["versions"]
    if versions and not function.code_or_config_updated:
        return versions[-1]  # nothing changed since: Lambda answers with the latest version
    function.code_or_config_updated = False
    number = entry.get("highest", 0) + 1
    entry["highest"] = number
    published = copy.copy(function)
    published.set_version(number)
    if description:
        published.description = description
    versions.append(published)
    self._arns[published.function_arn] = published
    return published


class Function(LambdaFunction):
    """moto's function model, with what its CloudFormation create and update leave out: the
    layers (the STREAMING door's adapter; Lambda refuses a layer version that does not exist),
    and, on update, a property the template no longer sets going back to its default (as
    CloudFormation's UpdateFunctionConfiguration leaves it), not keeping its old value."""

    DEFAULTS: ClassVar[dict[str, Any]] = {
        "Description": "",
        "Environment": {"Variables": {}},
        "Layers": [],
        "MemorySize": 128,
        "Timeout": 3,
    }

    @classmethod
    def create_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: dict[str, Any], *args: Any, **kwargs: Any
    ) -> CloudFormationModel:
        function = LambdaFunction.create_from_cloudformation_json(
            resource_name, cloudformation_json, *args, **kwargs
        )
        function.layers = function._get_layers_data(
            cloudformation_json["Properties"].get("Layers", [])
        )
        return function

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: LambdaFunction,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> CloudFormationModel:
        properties = cloudformation_json["Properties"]
        original_resource.update_configuration({**cls.DEFAULTS, **properties})
        original_resource.update_function_code(properties["Code"])
        return original_resource


class Version(ProvidedResource):
    type_name = "AWS::Lambda::Version"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        published = client("lambda").publish_version(
            **present(properties, "FunctionName", "Description", "CodeSha256")
        )
        return cls(
            published["FunctionArn"],
            properties,
            Version=published["Version"],
            FunctionArn=published["FunctionArn"],
        )

    def remove(self) -> None:
        function, version = self.properties["FunctionName"], self.attributes["Version"]
        aliases = client("lambda").list_aliases(FunctionName=function)["Aliases"]
        users = [alias["Name"] for alias in aliases if alias["FunctionVersion"] == version]
        if users:  # Lambda refuses to delete a version an alias points at
            raise RuntimeError(f"version {version} of {function} is referenced by {users}")
        client("lambda").delete_function(FunctionName=function, Qualifier=version)


class Alias(ProvidedResource):
    type_name = "AWS::Lambda::Alias"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        alias = client("lambda").create_alias(
            **present(properties, "FunctionName", "Name", "FunctionVersion", "Description")
        )
        return cls(alias["AliasArn"], properties, AliasArn=alias["AliasArn"])

    def update(self, properties: dict[str, Any]) -> None:
        client("lambda").update_alias(
            **present(properties, "FunctionName", "Name", "FunctionVersion", "Description")
        )

    def remove(self) -> None:
        client("lambda").delete_alias(
            FunctionName=self.properties["FunctionName"], Name=self.properties["Name"]
        )


class Permission(ProvidedResource):
    type_name = "AWS::Lambda::Permission"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("lambda").add_permission(
            StatementId=name,
            **present(
                properties, "FunctionName", "Action", "Principal", "SourceArn", "SourceAccount"
            ),
        )
        return cls(name, properties)

    def remove(self) -> None:
        client("lambda").remove_permission(
            FunctionName=self.properties["FunctionName"], StatementId=self.physical_id
        )


class EventInvokeConfig(ProvidedResource):
    type_name = "AWS::Lambda::EventInvokeConfig"
    SETTINGS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("lambda").put_function_event_invoke_config(
            **present(properties, "FunctionName", "Qualifier", *cls.SETTINGS)
        )
        return cls(f"{properties['FunctionName']}:{properties['Qualifier']}", properties)

    def update(self, properties: dict[str, Any]) -> None:
        client("lambda").update_function_event_invoke_config(
            **present(properties, "FunctionName", "Qualifier", *self.SETTINGS)
        )

    def remove(self) -> None:
        client("lambda").delete_function_event_invoke_config(
            FunctionName=self.properties["FunctionName"], Qualifier=self.properties["Qualifier"]
        )


PROVIDERS: tuple[type[CloudFormationModel], ...] = (
    Function,
    Version,
    Alias,
    Permission,
    EventInvokeConfig,
)
PATCHES = ((LambdaStorage, "publish_version", publish_version_as_lambda_does),)
"""moto methods replaced while the providers are in use."""
