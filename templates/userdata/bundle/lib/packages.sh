# shellcheck shell=bash
# Distribution packages: Slurm and munge at the release the config records, and the
# tools the role needs. Slurm packages are held so every node keeps one release.

APT_UPDATED=no

apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="${APT_LOCK_TIMEOUT}" "$@"
}

# DPkg::Lock::Timeout makes apt wait for the dpkg lock only: `apt-get update` fails at once
# while apt-daily holds /var/lib/apt/lists/lock, which it may take at any time on a first boot.
update_package_lists() {
  wait_for_apt_locks
  apt_get update -q
}

apt_update_once() {
  if [[ "${APT_UPDATED}" == no ]]; then
    retry PACKAGE_RETRIES update_package_lists
    APT_UPDATED=yes
  fi
}

# After adding an apt source: lists fetched before it do not name its packages.
apt_update_again() {
  APT_UPDATED=no
  apt_update_once
}

# "23.11.4-1.2ubuntu5" -> "23.11.4": drop the epoch and the Debian revision.
upstream_version() {
  local version="${1#*:}"
  echo "${version%%-*}"
}

# Empty output when the package is not installed.
installed_version() {
  { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } |
    awk '$1 == "install" && $3 == "installed" { print $4 }'
}

# The distribution version of the Slurm source package whose upstream release is
# SLURM_VERSION, e.g. 23.11.4-1.2ubuntu5 for 23.11.4; fails when there is none.
slurm_package_version() {
  local candidate
  while read -r candidate; do
    if [[ "$(upstream_version "${candidate}")" == "${SLURM_VERSION}" ]]; then
      echo "${candidate}"
      return 0
    fi
  done < <(apt-cache madison slurm-client | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
  return 1
}

# Installs what is missing: the Slurm packages before "--" at the pinned distribution
# version, the role's other packages after it at the distribution's current version.
# Nothing runs a Slurm command to check the result: client commands, even
# `sinfo --version`, die with "Could not establish a configuration source" on a node that
# has no slurm.conf yet, which is every node at this point.
install_packages() {
  local debian_version="" package missing=() current slurm_packages=()
  while (($# > 0)) && [[ "$1" != -- ]]; do
    slurm_packages+=("$1")
    shift
  done
  shift
  for package in "${slurm_packages[@]}"; do
    current="$(installed_version "${package}")"
    if [[ -n "${current}" ]]; then
      # Reaching SLURM_VERSION would take a downgrade, or leave this node on another release.
      [[ "$(upstream_version "${current}")" == "${SLURM_VERSION}" ]] ||
        die "the image already has ${package} ${current}, but software.slurm is ${SLURM_VERSION}; every node must run the same Slurm. Set software.slurm to $(upstream_version "${current}") or use an image without Slurm, then redeploy"
      continue
    fi
    if [[ -z "${debian_version}" ]]; then
      apt_update_once
      debian_version="$(slurm_package_version)" ||
        die "the distribution offers no Slurm ${SLURM_VERSION} (software.slurm); 'apt-cache madison slurm-client' lists what it has. Set software.slurm to that release (head and compute must match) and redeploy"
    fi
    missing+=("${package}=${debian_version}")
  done
  for package in "$@"; do
    [[ -n "$(installed_version "${package}")" ]] || missing+=("${package}")
  done
  if ((${#missing[@]} > 0)); then
    apt_update_once
    log "installing ${missing[*]}"
    retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends "${missing[@]}"
  fi
  hold_packages "${slurm_packages[@]}" munge
  log "Slurm ${SLURM_VERSION} installed: ${slurm_packages[*]}"
}

# An unattended upgrade of Slurm or munge on one node would break the version match.
hold_packages() {
  local held package
  held="$(apt-mark showhold)"
  for package in "$@"; do
    if ! grep -qxF "${package}" <<<"${held}"; then
      apt-mark hold "${package}"
    fi
  done
}
