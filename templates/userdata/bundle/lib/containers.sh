# shellcheck shell=bash
# Enroot from its release .debs and Pyxis built against this node's Slurm headers,
# every download pinned by version and checked by sha256 before it is used.

# Downloads url to DOWNLOAD_DIR/name unless a file with the right sha256 is there.
# The optional fourth argument names where the pin lives, for the error message.
fetch_verified() {
  local url="$1" name="$2" sha256="$3" pin="${4:-the version/sha256 pair in software}" file="${DOWNLOAD_DIR}/$2"
  mkdir -p "${DOWNLOAD_DIR}"
  if [[ -f "${file}" ]] && sha256sum --check --status <<<"${sha256}  ${file}"; then
    return 0
  fi
  retry DOWNLOAD_RETRIES curl -fsSL --retry "${DOWNLOAD_RETRIES}" -o "${file}.part" "${url}" ||
    die "cannot download ${url}; the node needs outbound HTTPS (NAT gateway)"
  if ! sha256sum --check --status <<<"${sha256}  ${file}.part"; then
    local got
    got="$(sha256sum "${file}.part" | awk '{print $1}')"
    rm -f "${file}.part"
    die "${name} has sha256 ${got}, want ${sha256}; the download is not the pinned release. Check ${pin} and redeploy"
  fi
  mv "${file}.part" "${file}"
  log "downloaded ${name} (sha256 verified)"
}

install_enroot() {
  if [[ "$(installed_version enroot)" == "${ENROOT_VERSION}-1" &&
    "$(installed_version enroot+caps)" == "${ENROOT_VERSION}-1" ]]; then
    log "Enroot ${ENROOT_VERSION} is installed"
    return 0
  fi
  fetch_verified "${ENROOT_URL}" "${ENROOT_DEB}" "${ENROOT_SHA256}"
  fetch_verified "${ENROOT_CAPS_URL}" "${ENROOT_CAPS_DEB}" "${ENROOT_CAPS_SHA256}"
  apt_update_once
  retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends \
    "${DOWNLOAD_DIR}/${ENROOT_DEB}" "${DOWNLOAD_DIR}/${ENROOT_CAPS_DEB}" "${ENROOT_DEPENDENCIES[@]}"
  hold_packages enroot enroot+caps
  log "Enroot ${ENROOT_VERSION} installed"
}

# Per-user directories on the role's scratch space; each user creates its own
# user-<uid> below these sticky, world-writable parents.
configure_enroot() {
  local directory
  for directory in "$@"; do
    if [[ ! -d "${R}${directory}" ]]; then
      mkdir -p "${R}${directory}"
      chmod 1777 "${R}${directory}"
    fi
  done
  install_from_bundle "${ROLE_TREE}/etc/enroot/enroot.conf" /etc/enroot/enroot.conf 0644 || true
  local hook
  for hook in "${ENROOT_HOOKS[@]}"; do
    if [[ -f "${R}/usr/share/enroot/hooks.d/${hook}" && ! -e "${R}/etc/enroot/hooks.d/${hook}" ]]; then
      mkdir -p "${R}/etc/enroot/hooks.d"
      cp "${R}/usr/share/enroot/hooks.d/${hook}" "${R}/etc/enroot/hooks.d/${hook}"
      log "enabled Enroot hook ${hook}"
    fi
  done
}

# A SPANK plugin must be built against the exact Slurm it loads into, or slurmd refuses
# it ("Incompatible plugin version"); the marker records both releases.
build_pyxis() {
  local marker="${STATE_DIR}/pyxis-${PYXIS_VERSION}-slurm-${SLURM_VERSION}-${SLURM_BUILD_KEY}.built"
  if [[ -f "${marker}" && -f "${R}${PYXIS_LIBRARY}" ]]; then
    log "Pyxis ${PYXIS_VERSION} is built for Slurm ${SLURM_VERSION}"
    return 0
  fi
  [[ -f "${R}/usr/include/slurm/spank.h" ]] ||
    die "no /usr/include/slurm/spank.h; the Slurm ${SLURM_VERSION} package (step install_slurm) must be installed to build Pyxis"
  fetch_verified "${PYXIS_URL}" "${PYXIS_TARBALL}" "${PYXIS_SHA256}"
  local source_dir="${BUILD_DIR}/pyxis-${PYXIS_VERSION}"
  rm -rf "${source_dir}"
  mkdir -p "$(dirname "${source_dir}")"
  tar -xzf "${DOWNLOAD_DIR}/${PYXIS_TARBALL}" -C "$(dirname "${source_dir}")"
  [[ -d "${source_dir}" ]] || die "${PYXIS_TARBALL} did not unpack to pyxis-${PYXIS_VERSION}/"
  make -C "${source_dir}" -j "$(nproc)"
  make -C "${source_dir}" install DESTDIR="${R}"
  [[ -f "${R}${PYXIS_LIBRARY}" ]] ||
    die "Pyxis built but ${PYXIS_LIBRARY} is missing; plugstack.conf loads it from there"
  mkdir -p "${STATE_DIR}"
  touch "${marker}"
  log "Pyxis ${PYXIS_VERSION} built against Slurm ${SLURM_VERSION}"
}
