"""The baseline a diff compares with: the `<stack>.template.json` files of a cdk.out
or snapshot directory."""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster.bad_input import BadInput
from gpucluster.diff.template_values import Template

TEMPLATE_SUFFIX = ".template.json"


class BaselineError(ValueError):
    """The baseline directory cannot be read as a set of CloudFormation templates."""


def load_templates(directory: str | Path) -> dict[str, Template]:
    """`<stack>.template.json` files of a cdk.out or snapshot directory, keyed by stack."""
    directory = Path(directory)
    hint = "pass a cdk.out directory or a snapshot directory of <stack>.template.json files"
    if not directory.is_dir():
        raise BaselineError(f"{directory}: not a directory; {hint}")
    files = sorted(directory.glob(f"*{TEMPLATE_SUFFIX}"))
    if not files:
        raise BaselineError(f"{directory}: holds no *{TEMPLATE_SUFFIX} file; {hint}")
    templates: dict[str, Template] = {}
    for path in files:
        try:
            templates[path.name[: -len(TEMPLATE_SUFFIX)]] = json.loads(path.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                "regenerate the baseline with `gpucluster synth`"
            ) from None
    return templates


def read_baseline(baseline: Path) -> dict[str, Template]:
    """`--baseline`'s templates; its problems are bad input like any other, reported
    before synth starts."""
    try:
        templates = load_templates(baseline)
    except BaselineError as exc:
        where, _, what = str(exc).partition(": ")
        raise BadInput(where, "(--baseline)", *what.split("; ", 1)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(
            getattr(exc, "filename", None) or baseline,
            "(--baseline)",
            f"cannot be read ({exc})",
            "pass a directory of readable *.template.json files",
        ) from None
    for name, template in templates.items():
        if not isinstance(template, dict) or not isinstance(template.get("Resources", {}), dict):
            raise BadInput(
                baseline / f"{name}{TEMPLATE_SUFFIX}",
                "(--baseline)",
                "is not a CloudFormation template (no Resources mapping)",
                "regenerate the baseline with `gpucluster synth`",
            )
    return templates
