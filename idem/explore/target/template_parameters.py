"""A template's parameters, given as `sam deploy` takes them.

- `--parameter NAME=VALUE` (repeatable);
- `--parameters-file FILE`, in the forms SAM and CloudFormation read:
  - a samconfig file (`samconfig.toml`, `.yaml`/`.yml`): `parameter_overrides` of the
    `[default.deploy.parameters]` table (or `[default.global.parameters]`), a string of
    `KEY=VALUE` pairs separated by spaces (quoted as a shell quotes) or a list of them
    (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/serverless-sam-cli-config.html);
  - a text file holding what `sam deploy --parameter-overrides` takes: `KEY=VALUE` pairs or the
    AWS CLI's `ParameterKey=KEY,ParameterValue=VALUE`
    (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-cli-command-reference-sam-deploy.html);
  - JSON as `aws cloudformation create-stack --parameters file://...` reads it:
    `[{"ParameterKey": ..., "ParameterValue": ...}]`.
`--parameter` wins over the file. A parameter with no default and no value, a value outside its
`AllowedValues`, a Number that is not a number, or a name the template does not declare ends the
check in one line naming the parameter and the option (`values`).
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ...core.errors import IdemError


class ParameterError(IdemError, ValueError):
    """A parameter given wrongly, or missing (exit 2)."""


def pair(text: str) -> tuple[str, str]:
    """`--parameter NAME=VALUE`."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ParameterError(f"--parameter {text!r} is not NAME=VALUE")
    return name.strip(), value


def overrides(text: str) -> dict[str, str]:
    """What `sam deploy --parameter-overrides` takes: `KEY=VALUE` or
    `ParameterKey=KEY,ParameterValue=VALUE`, separated by spaces, shell-quoted."""
    found: dict[str, str] = {}
    for token in shlex.split(text, comments=True):
        if token.startswith("ParameterKey="):
            key_part, sep, value_part = token.partition(",ParameterValue=")
            if not sep:
                raise ParameterError(f"{token!r} has ParameterKey= but no ,ParameterValue=")
            found[key_part[len("ParameterKey="):]] = value_part
        else:
            name, value = pair(token)
            found[name] = value
    return found


def from_file(path: str) -> dict[str, str]:
    """`--parameters-file FILE` (see the module)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ParameterError(f"--parameters-file {path}: cannot read it ({error.strerror})") from None
    try:
        if file.suffix == ".toml":
            import tomllib

            return _samconfig(tomllib.loads(text), path)
        if file.suffix in (".yaml", ".yml"):
            import yaml

            return _samconfig(yaml.safe_load(text) or {}, path)
        if text.lstrip().startswith("["):
            return {str(p["ParameterKey"]): str(p.get("ParameterValue", "")) for p in json.loads(text)}
        return overrides(text)
    except ParameterError as error:
        raise ParameterError(f"--parameters-file {path}: {error}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ParameterError(f"--parameters-file {path}: not a samconfig file, a --parameter-overrides "
                             f"string or CloudFormation's parameter JSON ({error})") from None
    except Exception as error:  # toml's and yaml's own errors
        raise ParameterError(f"--parameters-file {path}: cannot parse it ({error})") from None


def _samconfig(config: dict[str, Any], path: str) -> dict[str, str]:
    env = config.get("default") or {}
    for command in ("deploy", "global"):
        given = ((env.get(command) or {}).get("parameters") or {}).get("parameter_overrides")
        if given is not None:
            return overrides(" ".join(given) if isinstance(given, list) else str(given))
    raise ParameterError("no parameter_overrides under [default.deploy.parameters] or [default.global.parameters]")


def values(template: dict[str, Any], given: dict[str, str], path: str) -> dict[str, str]:
    """The given values checked against the template's Parameters: every parameter without a
    Default has one, each is allowed; returned as `deploy.template.resolve` takes them."""
    declared = template.get("Parameters") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(f"--parameter {unknown[0]}: {Path(path).name} declares no such parameter "
                             f"(its parameters: {', '.join(declared) or 'none'})")
    for name, spec in declared.items():
        spec = spec or {}
        value = given.get(name, spec.get("Default"))
        if value is None:
            raise ParameterError(f"--template {Path(path).name}: parameter {name} has no default and no value: "
                                 f"give it with --parameter {name}=VALUE (or --parameters-file FILE)")
        allowed = spec.get("AllowedValues")
        if allowed and str(value) not in [str(a) for a in allowed]:
            raise ParameterError(f"--parameter {name}={value}: not one of its AllowedValues "
                                 f"({', '.join(map(str, allowed))})")
        if spec.get("Type") == "Number":
            try:
                float(str(value))
            except ValueError:
                raise ParameterError(f"--parameter {name}={value}: the parameter is a Number") from None
    return {name: str(value) for name, value in given.items()}
