# shellcheck shell=bash
# Distribution packages: munge and the tools the role needs (Slurm is the pinned build,
# lib/slurm_package.sh). munge is held so every node keeps one release.

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

# Empty output when the package is not installed.
installed_version() {
  { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } |
    awk '$1 == "install" && $3 == "installed" { print $4 }'
}

# Installs the role's packages that are missing, at the distribution's current version.
# Slurm is not among them: every node installs the pinned build (lib/slurm_package.sh)
# under /usr, where a distribution Slurm on the image would clash with it.
install_packages() {
  local package missing=()
  for package in "${DISTRIBUTION_SLURM_PACKAGES[@]}"; do
    [[ -z "$(installed_version "${package}")" ]] ||
      die "the image has the distribution's ${package} $(installed_version "${package}"); gpucluster installs its own Slurm ${SLURM_VERSION} under /usr. Use an image without Slurm packages, then redeploy"
  done
  for package in "$@"; do
    [[ -n "$(installed_version "${package}")" ]] || missing+=("${package}")
  done
  if ((${#missing[@]} > 0)); then
    apt_update_once
    log "installing ${missing[*]}"
    retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends "${missing[@]}"
  fi
  hold_packages munge
}

# An unattended upgrade of munge on one node would break the version match.
hold_packages() {
  local held package
  held="$(apt-mark showhold)"
  for package in "$@"; do
    if ! grep -qxF "${package}" <<<"${held}"; then
      apt-mark hold "${package}"
    fi
  done
}
