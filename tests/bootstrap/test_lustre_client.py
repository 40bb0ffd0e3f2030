"""The Lustre client for the kernel the node boots, against the stubs of
tests/shell_harness.py: the module installed from the FSx repository only when the image lacks
it, the repository key trusted only with the pinned fingerprint, and loud failures that name
the kernel or the missing EFA LNet module."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.bootstrap import lustre_client
from gpucluster.config import ClusterConfig
from tests.bootstrap_runs import abandoned, continued, example
from tests.shell_harness import LUSTRE_KEY_FINGERPRINT, Node

KERNEL = "6.8.0-1021-aws"
MODULES = f"lustre-client-modules-{KERNEL}"
SOURCE_LINE = (
    f"deb [signed-by={lustre_client.KEYRING}] {lustre_client.REPOSITORY_URL} "
    f"{lustre_client.UBUNTU_SUITE} main"
)


def pinned(cfg: ClusterConfig, fingerprint: str | None = LUSTRE_KEY_FINGERPRINT) -> ClusterConfig:
    software = cfg.software.model_copy(update={"lustre_repo_key_fingerprint": fingerprint})
    return cfg.model_copy(update={"software": software})


def tcp_node(tmp_path: Path, **knobs: object) -> Node:
    return Node(tmp_path, pinned(example("default")), **knobs)  # type: ignore[arg-type]


def efa_node(tmp_path: Path, **knobs: object) -> Node:
    return Node(tmp_path, pinned(example("p5en-capacity-block")), efa=16, **knobs)  # type: ignore[arg-type]


def installs(run_calls: list[str]) -> list[str]:
    return [call for call in run_calls if call.startswith("apt-get") and MODULES in call]


def test_module_on_the_image_installs_nothing(tmp_path: Path) -> None:
    node = tcp_node(tmp_path)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert f"Lustre client module for kernel {KERNEL} is installed" in run.output
    assert installs(run.calls) == []
    assert not any(lustre_client.KEY_URL in call for call in run.calls)
    assert not (node.root / lustre_client.SOURCES_LIST.lstrip("/")).exists()


def test_missing_module_is_installed_from_the_fsx_repository_with_the_pinned_key(tmp_path: Path) -> None:
    node = tcp_node(tmp_path, lustre_module=False)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert f"kernel {KERNEL} has no Lustre client module" in run.output
    keyring = node.root / lustre_client.KEYRING.lstrip("/")
    # The dearmored key, written only after its fingerprint matched the pin.
    assert keyring.read_text() == f"binary pub {LUSTRE_KEY_FINGERPRINT}\n"
    assert (node.root / lustre_client.SOURCES_LIST.lstrip("/")).read_text() == SOURCE_LINE + "\n"
    fetch = run.index("curl -fsSL --max-time 60 -o")
    show = run.index("gpg --batch --show-keys --with-colons")
    dearmor = run.index("gpg --batch --yes --dearmor")
    install = run.index(
        "apt-get -o DPkg::Lock::Timeout=1200 install -y -q --no-install-recommends "
        f"{MODULES} lustre-client-utils"
    )
    # The update after the source list exists, so apt sees the new repository.
    update_after_list = [
        position
        for position, call in enumerate(run.calls)
        if call.startswith("apt-get") and " update" in call and position > dearmor
    ]
    assert fetch < show < dearmor < update_after_list[0] < install
    assert run.index("modprobe lustre") > install
    assert run.index("modprobe lustre") < run.index(f"mount {node.root}/fsx")
    assert continued(run) and not abandoned(run)


def test_installed_module_is_not_fetched_again(tmp_path: Path) -> None:
    node = tcp_node(tmp_path, lustre_module=False)
    assert node.run("compute", "gpu").returncode == 0
    second = node.run("compute", "gpu")
    assert second.returncode == 0, second.output
    assert installs(second.calls) == []
    assert not any(call.startswith("curl") and " -o " in call for call in second.calls)


def test_repository_key_with_another_fingerprint_is_refused(tmp_path: Path) -> None:
    served = "F" * 40
    node = tcp_node(tmp_path, lustre_module=False, lustre_key_fingerprint=served)
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert f"has fingerprint {served}, not {LUSTRE_KEY_FINGERPRINT}" in run.output
    assert "software.lustre_repo_key_fingerprint" in run.output
    assert not (node.root / lustre_client.KEYRING.lstrip("/")).exists()
    assert not (node.root / lustre_client.SOURCES_LIST.lstrip("/")).exists()
    assert installs(run.calls) == []
    assert abandoned(run)


def test_no_pinned_fingerprint_refuses_the_repository(tmp_path: Path) -> None:
    node = Node(tmp_path, pinned(example("default"), None), lustre_module=False)
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert f"kernel {KERNEL} has no Lustre client module on this image" in run.output
    assert "software.lustre_repo_key_fingerprint is not set" in run.output
    assert not any(lustre_client.KEY_URL in call for call in run.calls)
    assert abandoned(run)


@pytest.mark.parametrize(
    ("role", "group", "example_name"), [("compute", "gpu", "default"), ("head", None, "default")]
)
def test_kernel_without_a_build_fails_naming_the_kernel(
    tmp_path: Path, role: str, group: str | None, example_name: str
) -> None:
    node = Node(
        tmp_path,
        pinned(example(example_name)),
        lustre_module=False,
        lustre_available=False,
        nvme_mounted=role == "compute",
    )
    run = node.run(role, group)
    assert run.returncode != 0
    assert f"no Lustre client is built for kernel {KERNEL}" in run.output
    assert f"has no {MODULES}" in run.output
    assert "image.ami_id" in run.output and "image.kernel" in run.output
    assert installs(run.calls) == []
    assert run.called(f"mount {node.root}/fsx") == []


def test_efa_file_system_without_kefalnd_fails_naming_it(tmp_path: Path) -> None:
    node = efa_node(tmp_path, kefalnd=False)
    run = node.run("compute", "h200")
    assert run.returncode != 0
    assert f"kernel {KERNEL} has no EFA LNet module (kefalnd)" in run.output
    assert "storage.fsx_lustre.efa" in run.output
    assert run.called("lnetctl") == [] and run.called("modprobe") == []
    assert abandoned(run)


def test_efa_file_system_checks_kefalnd_before_lnet(tmp_path: Path) -> None:
    node = efa_node(tmp_path)
    run = node.run("compute", "h200")
    assert run.returncode == 0, run.output
    assert run.index(f"modinfo -k {KERNEL} kefalnd") < run.index("modprobe kefalnd")
    assert "EFA LNet module kefalnd is available" in run.output


def test_efa_module_installed_from_the_repository_is_loaded_after_lnet(tmp_path: Path) -> None:
    node = efa_node(tmp_path, lustre_module=False)
    run = node.run("compute", "h200")
    assert run.returncode == 0, run.output
    assert run.index("apt-get -o DPkg::Lock::Timeout=1200 install") < run.index("modprobe kefalnd")
    # Loading lustre first would bring LNet up on TCP only.
    assert run.called("modprobe lustre") == ["modprobe lustre"]
    assert run.index("lnetctl udsp add") < run.index("modprobe lustre")


def test_boot_unit_installs_a_missing_module_and_checks_kefalnd(tmp_path: Path) -> None:
    node = efa_node(tmp_path)
    assert node.run("compute", "h200").returncode == 0
    (node.state / "lnet").unlink()
    # The kernel changed under the node (the pin lifted by hand): no module for it yet.
    for module in (node.state / "modules" / KERNEL).iterdir():
        module.unlink()
    boot = node.run_script("bin/lustre-efa.sh", "--group", "h200")
    assert boot.returncode == 0, boot.output
    assert len(installs(boot.calls)) == 1
    assert len(boot.called("lnetctl net add --net efa")) == 8


def test_fingerprint_in_the_config_is_normalised_and_checked() -> None:
    from gpucluster.config import SoftwareConfig

    grouped = " ".join(LUSTRE_KEY_FINGERPRINT[i : i + 4] for i in range(0, 40, 4)).lower()
    assert SoftwareConfig(lustre_repo_key_fingerprint=grouped).lustre_repo_key_fingerprint == (
        LUSTRE_KEY_FINGERPRINT
    )
    with pytest.raises(ValueError, match="40-hex-digit OpenPGP fingerprint"):
        SoftwareConfig(lustre_repo_key_fingerprint="ABCD")


def test_unreachable_key_fails_after_bounded_attempts(tmp_path: Path) -> None:
    node = tcp_node(tmp_path, lustre_module=False)
    (node.fixtures / Path(lustre_client.KEY_URL).name).unlink()
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    fetches = [call for call in run.calls if call.startswith("curl") and lustre_client.KEY_URL in call]
    assert len(fetches) == lustre_client.KEY_ATTEMPTS
    assert all("--max-time 60" in call for call in fetches)
    attempts = lustre_client.KEY_ATTEMPTS
    assert f"cannot download {lustre_client.KEY_URL} after {attempts} attempts" in run.output
    assert not (node.root / lustre_client.KEYRING.lstrip("/")).exists()
    assert abandoned(run)


def test_download_that_is_no_key_is_refused(tmp_path: Path) -> None:
    node = tcp_node(tmp_path, lustre_module=False)
    served = node.fixtures / Path(lustre_client.KEY_URL).name
    served.write_text("<Error><Code>AccessDenied</Code></Error>\n")
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert f"has fingerprint none, not {LUSTRE_KEY_FINGERPRINT}" in run.output
    assert not (node.root / lustre_client.KEYRING.lstrip("/")).exists()
    assert installs(run.calls) == []
