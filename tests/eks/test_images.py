"""The Slurm images: every one the cluster runs is one of images.SLURM_COMPONENTS at the
cluster's release, a pinned digest is pulled by digest everywhere, and README names them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml

from gpucluster.eks import images, slinky_values
from tests.conftest import REPO

WITH_ACCOUNTING = "example-mixed"


def image_strings(node: object) -> Iterator[str]:
    """Every `image:` string in a rendered document (containers and Slinky's CR fields)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                yield value
            else:
                yield from image_strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from image_strings(item)


def slurm_images(docs: list[dict]) -> list[str]:
    return [image for doc in docs for image in image_strings(doc) if image.startswith(images.REGISTRY + "/")]


def test_every_slurm_image_is_a_pinned_component_at_the_clusters_release(rendered, clusters):
    for name, docs in rendered.items():
        version = clusters[name].slurm.version
        allowed = {images.slurm_image(c, version).reference() for c in images.SLURM_COMPONENTS}
        found = slurm_images(docs)
        assert found and set(found) <= allowed, (name, set(found) - allowed)
    # Accounting brings slurmdbd and the accounts container (slurmctld's image).
    version = clusters[WITH_ACCOUNTING].slurm.version
    assert images.slurm_image(images.SLURMDBD, version).reference() in slurm_images(rendered[WITH_ACCOUNTING])


def test_a_pinned_digest_is_pulled_by_digest_everywhere(helm, clusters, tmp_path, monkeypatch):
    cluster = clusters[WITH_ACCOUNTING]
    version = cluster.slurm.version
    digests = {(c, version): f"sha256:{index:064x}" for index, c in enumerate(images.SLURM_COMPONENTS, 1)}
    monkeypatch.setattr(images, "DIGESTS", digests)
    values = tmp_path / "slurm.yaml"
    values.write_text(yaml.safe_dump(slinky_values.slurm_values(cluster)))
    found = slurm_images(helm.template("slurm", values))
    expected = {f"{images.REGISTRY}/{c}@{digest}" for (c, _), digest in digests.items()}
    assert found and set(found) <= expected
    assert {f"{images.REGISTRY}/{images.SLURMCTLD}@{digests[images.SLURMCTLD, version]}"} < set(found)


def test_readme_names_every_image_and_what_is_unverified():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("#### Slurm images on EKS") :]
    section = section[: section.index("\n#")]
    for component in images.SLURM_COMPONENTS:
        assert f"`{component}`" in section, component
    assert f"`{images.REGISTRY}/<name>:25.11.7-{images.FLAVOR}`" in section
    assert ("no digest is pinned" in section) == (not images.DIGESTS)
    assert re.search(r"25\.11\.6", section)
