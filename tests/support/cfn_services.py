"""Test-only CloudFormation providers for the template's other types moto has no model for
(support.cfn_engine), through each service's API on moto: AppConfig (the functions'
published configurations), Cognito (AuthMode OAUTH with CreateUserPool), CloudWatch alarms,
an SQS queue policy and a Secrets Manager secret.

- `AWS::AppConfig::HostedConfigurationVersion`: every property is create-only, so a new
  content is a new version whose number is the profile's latest plus one; the replaced
  version is deleted at cleanup.
- moto's Cognito has no `DeleteResourceServer`: a replaced or removed resource server is
  taken out of moto's user pool directly. It has no managed login branding at all: that
  resource exists only as a stack resource here.
"""

from __future__ import annotations

import json
from typing import Any

from moto.cognitoidp.models import cognitoidp_backends
from moto.core import DEFAULT_ACCOUNT_ID

from support.cfn_model import REGION, ProvidedResource, client, present


# --- AppConfig ---------------------------------------------------------------------------------
class Application(ProvidedResource):
    type_name = "AWS::AppConfig::Application"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        made = client("appconfig").create_application(**present(properties, "Name", "Description"))
        return cls(made["Id"], properties, ApplicationId=made["Id"])

    def update(self, properties: dict[str, Any]) -> None:
        client("appconfig").update_application(
            ApplicationId=self.physical_id, **present(properties, "Name", "Description")
        )

    def remove(self) -> None:
        client("appconfig").delete_application(ApplicationId=self.physical_id)


class ConfigurationProfile(ProvidedResource):
    type_name = "AWS::AppConfig::ConfigurationProfile"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        made = client("appconfig").create_configuration_profile(
            **present(properties, "ApplicationId", "Name", "LocationUri", "Type", "Description")
        )
        return cls(made["Id"], properties, ConfigurationProfileId=made["Id"])

    def update(self, properties: dict[str, Any]) -> None:
        client("appconfig").update_configuration_profile(
            ConfigurationProfileId=self.physical_id,
            **present(properties, "ApplicationId", "Name", "Description"),
        )

    def remove(self) -> None:
        client("appconfig").delete_configuration_profile(
            ApplicationId=self.properties["ApplicationId"], ConfigurationProfileId=self.physical_id
        )


class HostedConfigurationVersion(ProvidedResource):
    type_name = "AWS::AppConfig::HostedConfigurationVersion"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        made = client("appconfig").create_hosted_configuration_version(
            Content=properties["Content"].encode(),
            **present(
                properties, "ApplicationId", "ConfigurationProfileId", "ContentType", "Description"
            ),
        )
        number = str(made["VersionNumber"])
        return cls(number, properties, VersionNumber=number)

    def remove(self) -> None:
        client("appconfig").delete_hosted_configuration_version(
            ApplicationId=self.properties["ApplicationId"],
            ConfigurationProfileId=self.properties["ConfigurationProfileId"],
            VersionNumber=int(self.physical_id),
        )


# --- Cognito -----------------------------------------------------------------------------------
class UserPool(ProvidedResource):
    type_name = "AWS::Cognito::UserPool"
    SETTINGS = ("Policies", "UsernameAttributes", "AutoVerifiedAttributes", "AdminCreateUserConfig")

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        pool = client("cognito-idp").create_user_pool(
            PoolName=properties.get("UserPoolName", name),
            **present(properties, "UserPoolTier", *cls.SETTINGS),
        )["UserPool"]
        provider = f"cognito-idp.{REGION}.amazonaws.com/{pool['Id']}"
        return cls(
            pool["Id"],
            properties,
            UserPoolId=pool["Id"],
            Arn=pool["Arn"],
            ProviderName=provider,
            ProviderURL=f"https://{provider}",
        )

    def update(self, properties: dict[str, Any]) -> None:
        client("cognito-idp").update_user_pool(
            UserPoolId=self.physical_id, **present(properties, *self.SETTINGS)
        )

    def remove(self) -> None:
        client("cognito-idp").delete_user_pool(UserPoolId=self.physical_id)


class UserPoolClient(ProvidedResource):
    type_name = "AWS::Cognito::UserPoolClient"
    SETTINGS = (
        "ClientName",
        "AllowedOAuthFlowsUserPoolClient",
        "AllowedOAuthFlows",
        "AllowedOAuthScopes",
        "CallbackURLs",
        "SupportedIdentityProviders",
        "ExplicitAuthFlows",
        "PreventUserExistenceErrors",
        "EnableTokenRevocation",
        "AccessTokenValidity",
        "IdTokenValidity",
        "RefreshTokenValidity",
        "TokenValidityUnits",
    )

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        made = client("cognito-idp").create_user_pool_client(
            **present(properties, "UserPoolId", "GenerateSecret", *cls.SETTINGS)
        )["UserPoolClient"]
        return cls(made["ClientId"], properties, ClientId=made["ClientId"], Name=made["ClientName"])

    def update(self, properties: dict[str, Any]) -> None:
        client("cognito-idp").update_user_pool_client(
            ClientId=self.physical_id, **present(properties, "UserPoolId", *self.SETTINGS)
        )

    def remove(self) -> None:
        client("cognito-idp").delete_user_pool_client(
            UserPoolId=self.properties["UserPoolId"], ClientId=self.physical_id
        )


class UserPoolDomain(ProvidedResource):
    type_name = "AWS::Cognito::UserPoolDomain"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("cognito-idp").create_user_pool_domain(
            **present(properties, "Domain", "UserPoolId", "ManagedLoginVersion")
        )
        return cls(properties["Domain"], properties)

    def update(self, properties: dict[str, Any]) -> None:
        client("cognito-idp").update_user_pool_domain(
            **present(properties, "Domain", "UserPoolId", "ManagedLoginVersion")
        )

    def remove(self) -> None:
        client("cognito-idp").delete_user_pool_domain(
            Domain=self.physical_id, UserPoolId=self.properties["UserPoolId"]
        )


class UserPoolResourceServer(ProvidedResource):
    type_name = "AWS::Cognito::UserPoolResourceServer"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        client("cognito-idp").create_resource_server(
            **present(properties, "UserPoolId", "Identifier", "Name", "Scopes")
        )
        return cls(properties["Identifier"], properties)

    def update(self, properties: dict[str, Any]) -> None:
        client("cognito-idp").update_resource_server(
            **present(properties, "UserPoolId", "Identifier", "Name", "Scopes")
        )

    def remove(self) -> None:
        pool = cognitoidp_backends[DEFAULT_ACCOUNT_ID][REGION].user_pools[
            self.properties["UserPoolId"]
        ]
        del pool.resource_servers[self.physical_id]


class ManagedLoginBranding(ProvidedResource):
    type_name = "AWS::Cognito::ManagedLoginBranding"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        return cls(name, properties, ManagedLoginBrandingId=name)

    def update(self, properties: dict[str, Any]) -> None:
        pass

    def remove(self) -> None:
        pass


# --- the rest ----------------------------------------------------------------------------------
class Alarm(ProvidedResource):
    """Its properties are PutMetricAlarm's parameters."""

    type_name = "AWS::CloudWatch::Alarm"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        alarm_name = properties.get("AlarmName", name)
        client("cloudwatch").put_metric_alarm(**{**properties, "AlarmName": alarm_name})
        return cls(alarm_name, properties)

    def update(self, properties: dict[str, Any]) -> None:
        client("cloudwatch").put_metric_alarm(**{**properties, "AlarmName": self.physical_id})

    def remove(self) -> None:
        client("cloudwatch").delete_alarms(AlarmNames=[self.physical_id])


class QueuePolicy(ProvidedResource):
    type_name = "AWS::SQS::QueuePolicy"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        policy = cls(name, properties)
        policy.update(properties)
        return policy

    def update(self, properties: dict[str, Any]) -> None:
        for queue in properties["Queues"]:
            client("sqs").set_queue_attributes(
                QueueUrl=queue, Attributes={"Policy": json.dumps(properties["PolicyDocument"])}
            )

    def remove(self) -> None:
        for queue in self.properties["Queues"]:
            client("sqs").set_queue_attributes(QueueUrl=queue, Attributes={"Policy": ""})


class Secret(ProvidedResource):
    type_name = "AWS::SecretsManager::Secret"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any]) -> ProvidedResource:
        # GenerateSecretString's settings are GetRandomPassword's parameters.
        value = client("secretsmanager").get_random_password(
            **properties.get("GenerateSecretString", {})
        )["RandomPassword"]
        made = client("secretsmanager").create_secret(
            Name=properties.get("Name", name),
            SecretString=value,
            **present(properties, "Description"),
        )
        return cls(made["ARN"], properties, Id=made["ARN"])

    def update(self, properties: dict[str, Any]) -> None:
        client("secretsmanager").update_secret(
            SecretId=self.physical_id, **present(properties, "Description")
        )

    def remove(self) -> None:
        client("secretsmanager").delete_secret(
            SecretId=self.physical_id, ForceDeleteWithoutRecovery=True
        )


PROVIDERS: tuple[type[ProvidedResource], ...] = (
    Application,
    ConfigurationProfile,
    HostedConfigurationVersion,
    UserPool,
    UserPoolClient,
    UserPoolDomain,
    UserPoolResourceServer,
    ManagedLoginBranding,
    Alarm,
    QueuePolicy,
    Secret,
)
