"""Render template.yaml for each parameter set and lint every rendering (`make validate`).

`sam validate` and `cfn-lint` only read parameter defaults, so each mode is written out as a
copy of the template whose defaults are that mode's values. For each mode this runs
`sam validate` (SAM's own translation), `sam validate --lint` (cfn-lint on the SAM template)
and, since cfn-lint no longer applies the SAM transform itself, cfn-lint on the CloudFormation
SAM translates the mode into (the routes, permissions and URLs as they would be deployed).

Run it with the AWS tools' Python (`.venv-sam/bin/python scripts/template_modes.py`); the
tests import MODES, load_template, render and translate from here to check the same modes.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"

# Parameter sets beyond the defaults, together covering every value of every switch:
# AuthMode iam/jwt/none, FunctionUrls on/off, SnapStart on/off, provisioned concurrency,
# reserved concurrency set/unset (and 0), throttling, each key source and the models bucket.
MODES: dict[str, dict[str, str]] = {
    "defaults": {},  # AuthMode iam, no function URLs, reserved concurrency 100 per function
    "iam-urls-limits": {
        "FunctionUrls": "true",
        "ThrottlingRateLimit": "50",
        "ThrottlingBurstLimit": "100",
        "ChatCompletionsReservedConcurrency": "20",
        "CompletionsReservedConcurrency": "10",
        "ProvisionedConcurrency": "2",
        "SigningKeysParameterName": "/derender/signing-keys",
    },
    "jwt-snapstart": {
        "AuthMode": "jwt",
        "JwtIssuer": "https://issuer.example.com/",
        "JwtAudience": "derender,derender-batch",
        "FunctionUrls": "true",
        "SnapStart": "true",
        "SigningKeysSecretArn":
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:derender-keys-AbCdEf",
        "SigningKeysKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/abcd-1234",
        "ModelsBucket": "derender-models",
        "ModelsPrefix": "models/",
    },
    "jwt-no-urls": {
        "AuthMode": "jwt",
        "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example",
        "JwtAudience": "derender",
        "CompletionsReservedConcurrency": "0",
    },
    "none": {"AuthMode": "none", "FunctionUrls": "true",
             "ChatCompletionsReservedConcurrency": "-1", "CompletionsReservedConcurrency": "-1"},
}


class CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short intrinsic tags in long form (``!Ref X`` → ``{"Ref": X}``,
    ``!Condition C`` → ``{"Condition": C}``, ``!If`` → ``{"Fn::If": …}``…)."""


def _intrinsic(loader: yaml.SafeLoader, name: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if name == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name if name in {"Ref", "Condition"} else f"Fn::{name}": value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml with its short tags in long form (what SAM and CloudFormation read)."""
    loaded: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"),
                                       Loader=CloudFormationLoader)
    return loaded


def parameter_values(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, str]:
    """Every parameter's value in a mode: its default unless the mode sets it."""
    unknown = set(overrides) - set(template["Parameters"])
    if unknown:
        raise KeyError(f"not parameters of the template: {sorted(unknown)}")
    values = {name: str(spec.get("Default", "")) for name, spec in
              template["Parameters"].items()}
    values.update(overrides)
    return values


def render(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """A copy of the template whose parameter defaults are the mode's values."""
    rendered = copy.deepcopy(template)
    for name, value in overrides.items():
        spec = rendered["Parameters"][name]
        spec["Default"] = int(value) if spec["Type"] == "Number" else value
    return rendered


class _NoManagedPolicies:
    """The template names no AWS managed policy, so SAM never needs IAM's list of them."""

    def load(self) -> dict[str, str]:
        return {}


def translate(template: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """The CloudFormation SAM deploys for a mode (local code paths replaced by S3 URIs, as
    `sam validate` does; conditions are left for CloudFormation to evaluate)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # "unpublished metrics"
    from samtranslator.translator.transform import transform  # noqa: PLC0415 (heavy)

    sam = render(template, overrides)
    for resource in sam["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://bucket/{props[key].strip('/')}.zip"
    values: dict[str, Any] = dict(parameter_values(template, overrides))
    values.update({"AWS::Region": REGION, "AWS::AccountId": "123456789012",
                   "AWS::Partition": "aws", "AWS::StackName": "derender"})
    translated: dict[str, Any] = transform(sam, values, _NoManagedPolicies())
    return translated


def _run(command: list[str]) -> bool:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.stdout.write(result.stdout + result.stderr)
    return result.returncode == 0


def main() -> int:
    bin_dir = Path(sys.executable).parent
    sam, cfn_lint = str(bin_dir / "sam"), str(bin_dir / "cfn-lint")
    template = load_template()
    started = time.monotonic()
    ok = True
    with tempfile.TemporaryDirectory(prefix="derender-modes-") as tmp:
        written = []
        for mode, overrides in MODES.items():
            sam_path = Path(tmp) / f"{mode}.sam.json"
            sam_path.write_text(json.dumps(render(template, overrides), indent=1))
            cfn_path = Path(tmp) / f"{mode}.cfn.json"
            cfn_path.write_text(json.dumps(translate(template, overrides), indent=1))
            written += [str(sam_path), str(cfn_path)]
            for lint in ([], ["--lint"]):
                passed = _run([sam, "validate", *lint, "--region", REGION, "-t", str(sam_path)])
                ok &= passed
                print(f"{mode}: sam validate {' '.join(lint)}".rstrip()
                      + (" ok" if passed else " FAILED"))
        passed = _run([cfn_lint, "--regions", REGION, "--", *written])
        ok &= passed
        print(f"cfn-lint on {len(MODES)} modes, SAM and translated: "
              + ("ok" if passed else "FAILED"))
    print(f"{len(MODES)} modes in {time.monotonic() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
