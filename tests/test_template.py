"""template.yaml agrees with the code and keeps its IAM to reads of the configured resources.

(``make validate`` checks the template against SAM and CloudFormation; these check it against
this repository: routes, layer paths, environment names, permissions.)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from derender import settings
from derender.app.main import CHAT_PATH, COMPLETIONS_PATH
from tests.conftest import ROOT

READ_ACTIONS = {"ssm:GetParameter", "secretsmanager:GetSecretValue", "kms:Decrypt",
                "s3:ListBucket", "s3:GetObject"}

# scripts/template_modes.py: the parameter sets `make validate` lints and the template loader
_spec = importlib.util.spec_from_file_location("template_modes", ROOT / "scripts/template_modes.py")
assert _spec is not None and _spec.loader is not None
modes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(modes)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = modes.load_template()
    return loaded


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in template["Resources"].items()
            if r["Type"] == "AWS::Serverless::Function"}


def test_each_route_has_its_own_function_with_its_handler(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    routes = {}
    for route in (r["Properties"] for r in resources.values()
                  if r["Type"] == "AWS::ApiGatewayV2::Route"):
        assert route["ApiId"] == {"Ref": "DerenderHttpApi"}
        method, path = route["RouteKey"].split(" ")
        assert method == "POST"
        integration_id = route["Target"]["Fn::Sub"].removeprefix("integrations/${")[:-1]
        integration = resources[integration_id]["Properties"]
        assert integration["ApiId"] == {"Ref": "DerenderHttpApi"}
        assert (integration["IntegrationType"], integration["PayloadFormatVersion"]) == (
            "AWS_PROXY", "2.0")  # the HTTP API event Mangum reads
        function = integration["IntegrationUri"]["Ref"].removesuffix(".Alias")
        assert integration["IntegrationUri"] == {"Ref": f"{function}.Alias"}  # the live alias
        props = resources[function]["Properties"]
        routes[path] = props["CodeUri"]
        assert (ROOT / props["CodeUri"] / "handler.py").is_file()
    assert routes == {CHAT_PATH: "functions/chat_completions/",
                      COMPLETIONS_PATH: "functions/completions/"}
    assert template["Globals"]["Function"]["AutoPublishAlias"] == "live"


def test_the_runtime_is_python_3_12_on_arm64_within_the_api_timeout(
        template: dict[str, Any]) -> None:
    function = template["Globals"]["Function"]
    assert (function["Runtime"], function["Architectures"]) == ("python3.12", ["arm64"])
    assert function["Handler"] == "handler.handler"
    assert function["Timeout"] < 30  # an HTTP API integration gives up after 30 s
    assert function["MemorySize"] == 1769  # one full vCPU


def test_the_layers_are_the_ones_make_layers_builds(template: dict[str, Any]) -> None:
    layers = {name: r["Properties"] for name, r in template["Resources"].items()
              if r["Type"] == "AWS::Serverless::LayerVersion"}
    assert {name: props["ContentUri"] for name, props in layers.items()} == {
        "DependenciesLayer": "build/layers/deps/", "TokenizersLayer": "build/layers/tokenizers/"}
    assert template["Globals"]["Function"]["Layers"] == [
        {"Ref": "DependenciesLayer"}, {"Ref": "TokenizersLayer"}]
    build = (ROOT / "scripts/build-layers.sh").read_text(encoding="utf-8")
    assert '"$out/deps/python"' in build and '"$out/tokenizers/tokenizers"' in build
    # a layer unpacks under /opt: tokenizers/tokenizers/<model> → /opt/tokenizers/<model>
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables[settings.MODELS_DIR] == str(settings.LAMBDA_LAYER_MODELS)


def test_environment_names_are_settings_the_code_reads(template: dict[str, Any]) -> None:
    names = {value for key, value in vars(settings).items()
             if key.isupper() and isinstance(value, str) and value.startswith("DERENDER_")}
    assert set(template["Globals"]["Function"]["Environment"]["Variables"]) <= names


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            for entry in resource["Properties"]["PolicyDocument"]["Statement"]:
                # a conditional statement is [condition, statement, AWS::NoValue]
                found.append(entry["Fn::If"][1] if "Fn::If" in entry else entry)
    return found


def test_iam_allows_only_reads_of_the_configured_resources(template: dict[str, Any]) -> None:
    statements = _statements(template)
    assert {s["Action"] for s in statements} == READ_ACTIONS
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert statement["Resource"] != "*" and "*" not in str(statement["Action"])
        resource = statement["Resource"]
        text = resource.get("Fn::Sub", "") if isinstance(resource, dict) else resource
        assert "${AWS::AccountId}:*" not in text and ":::*" not in text


def test_each_policy_exists_only_with_its_source(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert resources["KeySourcePolicy"]["Condition"] == "HasKeySource"
    assert resources["ModelsSourcePolicy"]["Condition"] == "HasModelsBucket"
    for props in functions(template).values():
        assert props["Policies"] == [
            {"Fn::If": ["HasKeySource", {"Ref": "KeySourcePolicy"}, {"Ref": "AWS::NoValue"}]},
            {"Fn::If": ["HasModelsBucket", {"Ref": "ModelsSourcePolicy"},
                        {"Ref": "AWS::NoValue"}]}]


def test_outputs_give_both_endpoints(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert outputs["ChatCompletionsUrl"]["Value"]["Fn::Sub"].endswith(CHAT_PATH)
    assert outputs["CompletionsUrl"]["Value"]["Fn::Sub"].endswith(COMPLETIONS_PATH)


def test_the_readme_deploy_commands_exist() -> None:
    makefile = Path(ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("layers:", "validate:", "bundle:"):
        assert f"\n{target}" in makefile

