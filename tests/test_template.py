"""template.yaml agrees with the code and keeps its IAM to reads of the configured resources.

(``make validate`` checks the template against SAM and CloudFormation; these check it against
this repository: routes, layer paths, environment names, permissions. The access tests run on
the CloudFormation SAM translates each parameter set into, with the conditions evaluated, that
is on what a deployment in that mode would contain.)
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

import pytest

from derender import settings
from derender.contract import routes
from derender_testing.models import ROOT

READ_ACTIONS = {"ssm:GetParameter", "secretsmanager:GetSecretValue", "kms:Decrypt",
                "s3:ListBucket", "s3:GetObject"}

# scripts/template_modes.py: the parameter sets `make validate` lints, the loader, SAM's transform
_spec = importlib.util.spec_from_file_location("template_modes", ROOT / "scripts/template_modes.py")
assert _spec is not None and _spec.loader is not None
modes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(modes)

CHAT_PATH, COMPLETIONS_PATH = routes.CHAT.path, routes.COMPLETIONS.path
ROUTES = {f"{routes.CHAT.method} {CHAT_PATH}": "ChatCompletionsFunction",
          f"{routes.COMPLETIONS.method} {COMPLETIONS_PATH}": "CompletionsFunction"}
JWT = {"JwtIssuer": "https://issuer.example.com/", "JwtAudience": "derender,batch"}


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


# --- what each mode deploys --------------------------------------------------------------------

_NO_VALUE = object()


class Deployment:
    """A parameter set's view of a template: its conditions evaluated, every ``Fn::If`` taken,
    ``AWS::NoValue`` dropped, parameter references replaced by their values, resources and
    outputs whose condition is false left out (what CloudFormation would create)."""

    def __init__(self, template: dict[str, Any], params: dict[str, str]) -> None:
        self.params = params
        self._conditions = template.get("Conditions", {})
        self._known: dict[str, bool] = {}
        self.resources: dict[str, dict[str, Any]] = {
            name: self.resolve(r) for name, r in template["Resources"].items()
            if self.condition(r.get("Condition"))}
        self.outputs = {name: self.resolve(o) for name, o in template.get("Outputs", {}).items()
                        if self.condition(o.get("Condition"))}

    def condition(self, name: str | None) -> bool:
        if name is None:
            return True
        if name not in self._known:
            self._known[name] = self.holds(self._conditions[name])
        return self._known[name]

    def holds(self, node: dict[str, Any]) -> bool:
        """A condition or rule assertion (Fn::Equals/Not/And/Or, Condition)."""
        ((function, args),) = node.items()
        if function == "Condition":
            return self.condition(args)
        if function == "Fn::Equals":
            left, right = (self.params[a["Ref"]] if isinstance(a, dict) else str(a)
                           for a in args)
            return left == right
        if function == "Fn::Not":
            return not self.holds(args[0])
        if function in {"Fn::And", "Fn::Or"}:
            return (all if function == "Fn::And" else any)(self.holds(a) for a in args)
        raise AssertionError(f"not evaluated here: {node}")

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in map(self.resolve, node) if v is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Fn::If"}:
            name, then, otherwise = node["Fn::If"]
            return self.resolve(then if self.condition(name) else otherwise)
        if set(node) == {"Ref"}:
            if node["Ref"] == "AWS::NoValue":
                return _NO_VALUE
            return self.params.get(node["Ref"], node)
        resolved = {k: self.resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {name: r.get("Properties", {}) for name, r in self.resources.items()
                if r["Type"] == kind}


_translated: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}


def deploy(template: dict[str, Any], overrides: dict[str, str]) -> Deployment:
    """SAM's translation of the template for these parameters, as CloudFormation deploys it."""
    key = tuple(sorted(overrides.items()))
    if key not in _translated:
        _translated[key] = modes.translate(template, overrides)
    return Deployment(_translated[key], modes.parameter_values(template, overrides))


def _with(mode: str, auth: str, urls: str) -> dict[str, str]:
    overrides = {**modes.MODES[mode], "AuthMode": auth, "FunctionUrls": urls}
    if auth == "jwt":
        overrides = {**JWT, **overrides}  # the mode's own issuer and audience, if it has them
    else:
        overrides = {k: v for k, v in overrides.items() if k not in JWT}
    return overrides


# every mode make validate lints, under every AuthMode, with function URLs on and off
ACCESS_CASES = [pytest.param(mode, auth, urls, id=f"{mode}-{auth}-urls_{urls}")
                for mode, auth, urls in itertools.product(
                    modes.MODES, ("iam", "jwt", "none"), ("true", "false"))]


@pytest.mark.parametrize(("mode", "auth", "urls"), ACCESS_CASES)
def test_no_route_is_reachable_unauthenticated_unless_auth_mode_is_none(
        template: dict[str, Any], mode: str, auth: str, urls: str) -> None:
    deployed = deploy(template, _with(mode, auth, urls))
    routes = deployed.of_type("AWS::ApiGatewayV2::Route")
    # exactly the two derender routes: no `$default` or catch-all route to reach anything else
    assert {r["RouteKey"] for r in routes.values()} == set(ROUTES)
    assert len(routes) == 2
    authorizers = deployed.of_type("AWS::ApiGatewayV2::Authorizer")
    expected = {"iam": "AWS_IAM", "jwt": "JWT", "none": "NONE"}[auth]
    for route in routes.values():
        assert route["ApiId"] == {"Ref": "DerenderHttpApi"}
        assert route["AuthorizationType"] == expected
        if auth == "jwt":
            assert route["AuthorizerId"] == {"Ref": "JwtAuthorizer"}
        else:
            assert "AuthorizerId" not in route
    if auth == "jwt":
        authorizer = authorizers["JwtAuthorizer"]
        assert authorizer["AuthorizerType"] == "JWT"
        assert authorizer["ApiId"] == {"Ref": "DerenderHttpApi"}
        assert authorizer["IdentitySource"] == ["$request.header.Authorization"]
        params = deployed.params
        assert params["JwtIssuer"].startswith("https://") and params["JwtAudience"]
        assert authorizer["JwtConfiguration"] == {
            "Issuer": params["JwtIssuer"], "Audience": {"Fn::Split": [",", params["JwtAudience"]]}}
    else:
        assert authorizers == {}
    # the only other entry points: IAM-only function URLs on the live aliases, when asked for
    urls_deployed = deployed.of_type("AWS::Lambda::Url")
    assert {u["AuthType"] for u in urls_deployed.values()} <= {"AWS_IAM"}
    assert sorted(u["TargetFunctionArn"]["Ref"] for u in urls_deployed.values()) == (
        ["ChatCompletionsFunctionAliaslive", "CompletionsFunctionAliaslive"] if urls == "true"
        else [])
    url_outputs = {"ChatCompletionsFunctionUrl", "CompletionsFunctionUrl"}
    assert url_outputs <= set(deployed.outputs) if urls == "true" else (
        not url_outputs & set(deployed.outputs))
    # nothing else can be invoked: no other API, and only API Gateway (this API, these routes)
    # may invoke the functions
    kinds = {r["Type"] for r in deployed.resources.values()}
    assert not {k for k in kinds if k.startswith(("AWS::ApiGateway::", "AWS::Serverless::"))}
    assert list(deployed.of_type("AWS::ApiGatewayV2::Api")) == ["DerenderHttpApi"]
    permissions = deployed.of_type("AWS::Lambda::Permission")
    assert len(permissions) == 2
    granted = set()
    for permission in permissions.values():
        assert permission["Action"] == "lambda:InvokeFunction"
        assert permission["Principal"] == "apigateway.amazonaws.com"
        assert "FunctionUrlAuthType" not in permission
        source = permission["SourceArn"]["Fn::Sub"]
        prefix = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:"
        api_stage, _, route_key = source.removeprefix(prefix).partition("/*/")
        assert source.startswith(prefix) and api_stage == "${DerenderHttpApi}"
        method, _, path = route_key.partition("/")
        function = ROUTES[f"{method} /{path}"]
        assert permission["FunctionName"] == {"Ref": f"{function}Aliaslive"}
        granted.add(function)
    assert granted == set(ROUTES.values())


def test_none_is_the_only_way_to_an_open_route(template: dict[str, Any]) -> None:
    open_in = {(mode, auth, urls) for mode, auth, urls in (case.values for case in ACCESS_CASES)
               if any(r["AuthorizationType"] == "NONE" for r in
                      deploy(template, _with(mode, auth, urls))
                      .of_type("AWS::ApiGatewayV2::Route").values())}
    assert open_in == {case.values for case in ACCESS_CASES if case.values[1] == "none"}
    assert template["Parameters"]["AuthMode"]["Default"] == "iam"
    assert deploy(template, {}).params["AuthMode"] == "iam"


def _rules_hold(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, bool]:
    deployed = Deployment({"Resources": {}}, modes.parameter_values(template, overrides))
    return {name: all(deployed.holds(a["Assert"]) for a in rule["Assertions"])
            for name, rule in template["Rules"].items()}


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_every_mode_satisfies_the_template_rules(template: dict[str, Any], mode: str) -> None:
    # cfn-lint does not evaluate Rules: a mode breaking one would not deploy
    assert all(_rules_hold(template, modes.MODES[mode]).values())


@pytest.mark.parametrize("missing", [
    {"AuthMode": "jwt"},
    {"AuthMode": "jwt", "JwtIssuer": JWT["JwtIssuer"]},
    {"AuthMode": "jwt", "JwtAudience": JWT["JwtAudience"]},
])
def test_jwt_without_issuer_and_audience_is_refused(
        template: dict[str, Any], missing: dict[str, str]) -> None:
    assert not _rules_hold(template, missing)["JwtNeedsIssuerAndAudience"]
    assert _rules_hold(template, {"AuthMode": "jwt", **JWT})["JwtNeedsIssuerAndAudience"]


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_throttling_caps_every_route_of_the_default_stage(
        template: dict[str, Any], mode: str) -> None:
    deployed = deploy(template, modes.MODES[mode])
    stages = deployed.of_type("AWS::ApiGatewayV2::Stage")
    (stage,) = stages.values()
    assert stage["ApiId"] == {"Ref": "DerenderHttpApi"}
    assert (stage["StageName"], stage["AutoDeploy"]) == ("$default", True)  # no path prefix
    limits = {"ThrottlingRateLimit": deployed.params["ThrottlingRateLimit"],
              "ThrottlingBurstLimit": deployed.params["ThrottlingBurstLimit"]}
    assert stage["DefaultRouteSettings"] == limits
    # each route by name (route-level throttling, a bucket per route), the same limits
    routes = deployed.of_type("AWS::ApiGatewayV2::Route")
    keys = {props["RouteKey"] for props in routes.values()}
    assert keys == {"POST /v1/chat/completions/derender", "POST /v1/completions/derender"}
    assert stage["RouteSettings"] == dict.fromkeys(keys, limits)
    assert set(template["Resources"]["DerenderHttpApiStage"]["DependsOn"]) == set(routes)


def test_throttling_defaults_are_set_below_the_account_limits(template: dict[str, Any]) -> None:
    params = template["Parameters"]
    rate, burst = params["ThrottlingRateLimit"], params["ThrottlingBurstLimit"]
    assert 0 < rate["Default"] <= 10_000 and 0 < burst["Default"] <= 5_000
    assert rate["MinValue"] >= 1 and burst["MinValue"] >= 1  # 0 would refuse every call


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_reserved_concurrency_is_set_only_when_given(
        template: dict[str, Any], mode: str) -> None:
    deployed = deploy(template, modes.MODES[mode])
    functions_deployed = deployed.of_type("AWS::Lambda::Function")
    assert set(functions_deployed) == set(ROUTES.values())
    for name, props in functions_deployed.items():
        value = deployed.params[name.removesuffix("Function") + "ReservedConcurrency"]
        if value == "-1":
            assert "ReservedConcurrentExecutions" not in props
        else:
            assert props["ReservedConcurrentExecutions"] == value


def test_the_defaults_cap_each_function_and_open_no_function_url(
        template: dict[str, Any]) -> None:
    """Issue 22: reserved concurrency set by default (the only cap a function URL has), and
    function URLs only when asked for."""
    params = template["Parameters"]
    assert params["FunctionUrls"]["Default"] == "false"
    deployed = deploy(template, modes.MODES["defaults"])
    for name, props in deployed.of_type("AWS::Lambda::Function").items():
        default = params[name.removesuffix("Function") + "ReservedConcurrency"]["Default"]
        assert 0 < default <= 450  # two of them leave Lambda's 100 of a 1,000 quota free
        assert props["ReservedConcurrentExecutions"] == str(default)
    assert not deployed.of_type("AWS::Lambda::Url")


def test_the_modes_cover_every_switch() -> None:
    seen: dict[str, set[str]] = {}
    for overrides in modes.MODES.values():
        values = modes.parameter_values(modes.load_template(), overrides)
        for name, value in values.items():
            seen.setdefault(name, set()).add(value)
    assert seen["AuthMode"] == {"iam", "jwt", "none"}
    assert seen["FunctionUrls"] == seen["SnapStart"] == {"true", "false"}
    assert {"-1", "0"} < seen["CompletionsReservedConcurrency"]
    assert len(seen["ChatCompletionsReservedConcurrency"]) > 1
    assert len(seen["ThrottlingRateLimit"]) > 1 and len(seen["ThrottlingBurstLimit"]) > 1
    assert len(seen["ProvisionedConcurrency"]) > 1


def test_the_live_alias_keeps_snapstart_and_provisioned_concurrency(
        template: dict[str, Any]) -> None:
    provisioned = deploy(template, modes.MODES["iam-urls-limits"])
    snapstart = deploy(template, modes.MODES["jwt-snapstart"])
    for function in ROUTES.values():
        alias = provisioned.resources[f"{function}Aliaslive"]["Properties"]
        assert alias["Name"] == "live"
        assert alias["ProvisionedConcurrencyConfig"] == {"ProvisionedConcurrentExecutions": "2"}
        assert snapstart.resources[function]["Properties"]["SnapStart"] == {
            "ApplyOn": "PublishedVersions"}
        assert "ProvisionedConcurrencyConfig" not in (
            snapstart.resources[f"{function}Aliaslive"]["Properties"])
        assert provisioned.resources[function]["Properties"]["SnapStart"] == {"ApplyOn": "None"}
