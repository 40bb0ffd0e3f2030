"""What the tests of the EKS stack's cluster software share: finding its releases."""

from __future__ import annotations

import json

from tests.conftest import resources_of

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def by_release(template):
    return {r["Properties"]["Release"]: (logical, r) for logical, r in resources_of(template, HELM).items()}


def values_of(resource):
    return json.loads(resource["Properties"]["Values"])


def slurm_objects(template):
    """The manifest of manifests.objects (logical id, resource)."""
    [found] = [
        (logical, r)
        for logical, r in resources_of(template, MANIFEST).items()
        if logical.startswith("SlurmObjects")
    ]
    return found
