"""The CDK runtime's own refusals as one line each, exit 1, for `gpucluster synth|diff`
and `cdk synth`: Node missing, not Node or too old; a jsii package cache that other
users could write to; an output directory that is full or cannot be written (by Node,
or by gpucluster staging an asset).

jsii starts Node at the first `aws_cdk` import and reports what goes wrong there as
JSIIError (a fault of the runtime) or RuntimeError (a JavaScript error, such as a
failed write); neither says what to do, and Node missing or too old surfaces as a
Python error deep in jsii. So Node is checked before the import, and the runtime's
messages are read for the directory at fault.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpucluster.bad_input import disk_fix, write_failure
from gpucluster.command_lines import command_line
from gpucluster.env_problem import EnvironmentProblem
from gpucluster.synth.cdk_runtime import use_wheel_node, wheel_node

# aws-cdk-lib's package.json (the wheel's jsii assembly): "engines": {"node": ">= 20.0.0"}.
MIN_NODE = 20
_VERSION = re.compile(r"v(\d+)\.\d+\.\d+\S*")
# jsii's PackageCacheError: "Cannot use the jsii package cache in ROOT: REASON. Fix the directory, ..."
_CACHE = re.compile(
    r"Cannot use the jsii package cache in (?P<root>.+?): (?P<reason>.+?)\. Fix the directory"
)
_INSECURE = re.compile(
    r"because (?P<dir>.+?) (?:has a parent directory (?P<parent>.+?) that )?(?P<what>is .+?)\. Make sure"
)
# A Node.js file-system error: "ENOSPC: no space left on device, write" or
# "EACCES: permission denied, copyfile 'SRC' -> 'DST'".
_FS_ERROR = re.compile(
    r"\b(?P<code>E[A-Z]+): (?P<what>[^,]+), \w+(?: '(?P<path>[^']*)')?(?: -> '(?P<dest>[^']*)')?"
)
_DISK = frozenset({"ENOSPC", "EDQUOT", "EIO"})
_DENIED = frozenset({"EACCES", "EPERM", "EROFS"})


def _node_fix() -> str:
    ours = wheel_node()
    if ours is not None and os.environ.get("JSII_NODE") != str(ours):
        return f"point JSII_NODE at Node {MIN_NODE} or later, or unset it to use the Node gpucluster installs"
    return (
        f"install Node.js {MIN_NODE} or later on PATH, or run `make setup` to install gpucluster's own Node"
    )


def check_node() -> None:
    """Node as jsii will start it (JSII_NODE, else `node` on PATH): there, runnable, new enough.

    Skipped once aws_cdk is imported: the runtime is then running on a Node that works."""
    if "aws_cdk" in sys.modules:
        return
    use_wheel_node()
    node = os.environ.get("JSII_NODE") or "node"
    found = shutil.which(node)
    if found is None:
        raise EnvironmentProblem(node, "Node.js is not there (the CDK runs on it)", _node_fix())
    try:
        said = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(found, f"cannot be run ({exc})", _node_fix()) from None
    version = said.stdout.strip()
    match = _VERSION.fullmatch(version)
    if match is None:
        printed = (version or said.stderr.strip()).splitlines()
        shown = " ".join(printed[0].split())[:80] if printed else "nothing"
        raise EnvironmentProblem(found, f"is not Node.js (`--version` printed {shown})", _node_fix())
    if int(match[1]) < MIN_NODE:
        raise EnvironmentProblem(
            found, f"is Node {version}; the CDK needs Node {MIN_NODE} or later", _node_fix()
        )


def _cache_problem(message: str) -> EnvironmentProblem | None:
    cache = _CACHE.search(message)
    if cache is None:
        return None
    root, reason = cache["root"], cache["reason"]
    insecure = _INSECURE.search(reason + ". Make sure")
    if insecure is None:
        return EnvironmentProblem(
            root,
            f"jsii cannot keep its package cache here ({reason})",
            "set JSII_RUNTIME_PACKAGE_CACHE_ROOT to a directory only you can write, "
            "or JSII_RUNTIME_PACKAGE_CACHE=disabled",
        )
    directory = insecure["parent"] or insecure["dir"]
    what = insecure["what"]
    first = (
        f"`{command_line('chmod', 'go-w', directory)}`"
        if "writable by group or others" in what
        else f"`chown` {directory} to you"
    )
    return EnvironmentProblem(
        directory,
        f"{what}, so jsii will not keep its package cache in {root} "
        "(other users could change the code it runs)",
        f"{first}, or set JSII_RUNTIME_PACKAGE_CACHE_ROOT to a directory only you can write",
    )


def _write_problem(message: str, outdir: Path, option: str) -> EnvironmentProblem | None:
    failed = _FS_ERROR.search(message)
    if failed is None or failed["code"] not in _DISK | _DENIED:
        return None
    where = failed["dest"] or failed["path"] or str(outdir)
    fix = disk_fix(option) if failed["code"] in _DISK else f"point {option} at a directory you can write to"
    return EnvironmentProblem(where, f"cannot be written ({failed['what']})", fix)


def explain(exc: Exception, outdir: Path, option: str) -> EnvironmentProblem | None:
    """The one line for a refusal of the CDK runtime, or None for anything else (a bug)."""
    message = " ".join(str(exc).split())
    return _cache_problem(message) or _write_problem(message, outdir, option)


@contextmanager
def cdk_runtime(outdir: str | Path, option: str = "--output") -> Iterator[None]:
    """Run CDK code that writes into `outdir`, with Node checked first and the runtime's
    refusals turned into EnvironmentProblem; `option` is how the user picks another
    directory (`--output`, or TMPDIR for the scratch directory of a diff)."""
    check_node()
    try:
        yield
    except OSError as exc:
        # A file gpucluster writes into the cloud assembly itself (the staged assets).
        if exc.filename is None or not Path(exc.filename).is_relative_to(outdir):
            raise
        raise write_failure(Path(outdir), option, exc) from None
    except Exception as exc:
        from jsii.errors import JSIIError

        from gpucluster.synth.nag import NagFindings

        # JSIIError: a fault of the runtime; RuntimeError: a JavaScript error (cdk-nag's
        # findings are one too, and are reported as findings).
        if isinstance(exc, NagFindings) or not isinstance(exc, JSIIError | RuntimeError):
            raise
        problem = explain(exc, Path(outdir), option)
        if problem is None:
            raise
        raise problem from None
