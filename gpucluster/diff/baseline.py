"""The baseline a diff compares with: the `<stack>.template.json` files of a cdk.out
or snapshot directory, of the same cluster as the config."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpucluster.bad_input import BadInput
from gpucluster.diff.template_values import Template
from gpucluster.json_input import JsonProblem, parse_json
from gpucluster.names import CLUSTER_TAG, STACK_ROLES

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
            templates[path.name[: -len(TEMPLATE_SUFFIX)]] = parse_json(path.read_text("utf-8"))
        except JsonProblem as exc:
            where = "" if exc.line is None else f", line {exc.line}"
            raise BaselineError(
                f"{path}: {exc.what}{where}; regenerate the baseline with `gpucluster synth`"
            ) from None
    return templates


def read_baseline(baseline: Path, cluster: str) -> dict[str, Template]:
    """`--baseline`'s templates, which must be those of `cluster` (the config's name); its
    problems are bad input like any other, reported before synth starts."""
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
    _same_cluster(baseline, templates, cluster)
    return templates


_STACK_NAME = re.compile(rf"^(?P<cluster>.+)-(?:{'|'.join(STACK_ROLES)})$")


def baseline_clusters(templates: dict[str, Template]) -> set[str]:
    """The clusters a baseline belongs to, by its stack names (`<cluster>-storage`, ...) and
    by the cluster tag on its resources; empty for templates that show neither."""
    found = {m["cluster"] for name in templates if (m := _STACK_NAME.match(name))}
    for template in templates.values():
        found |= _tagged_clusters(template)
    return found


def _tagged_clusters(node: Any) -> set[str]:
    # Tags come as [{"Key": k, "Value": v}] on most types and as {k: v} on some (SSM parameters).
    if isinstance(node, list):
        return set().union(*(_tagged_clusters(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = set()
    if node.get("Key") == CLUSTER_TAG and isinstance(node.get("Value"), str):
        found.add(node["Value"])
    if isinstance(node.get(CLUSTER_TAG), str):
        found.add(node[CLUSTER_TAG])
    for value in node.values():
        found |= _tagged_clusters(value)
    return found


def _same_cluster(baseline: Path, templates: dict[str, Template], cluster: str) -> None:
    """A baseline of another cluster would diff as every resource deleted and re-added."""
    others = sorted(baseline_clusters(templates) - {cluster})
    if not others:
        return
    if len(others) == 1 and cluster not in baseline_clusters(templates):
        raise BadInput(
            baseline,
            "(--baseline)",
            f"the baseline is cluster {others[0]}, the config is {cluster}",
            f"pass the baseline of cluster {cluster}, or the config of cluster {others[0]} "
            "(renaming a cluster creates new stacks; it does not update the old ones)",
        )
    raise BadInput(
        baseline,
        "(--baseline)",
        f"holds the templates of several clusters ({', '.join(sorted({*others, cluster}))})",
        f"pass a directory with the templates of cluster {cluster} only",
    )
