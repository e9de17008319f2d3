# Sourced by the setup and zoo scripts: installs Debian packages that are
# missing, and does nothing (no `apt-get update`) when all are present.
#
#   ensure_debian_packages TAG PACKAGE...
#
# TAG prefixes the messages. Needs root, or sudo.
ensure_debian_packages() {
	local tag=$1 p status
	shift
	local missing=()
	for p in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		[ "$status" = "install ok installed" ] || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "$tag: Debian packages present ($*)"
		return 0
	fi
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null || { echo "$tag: need root to install: ${missing[*]}" >&2; return 1; }
		sudo=(sudo)
	fi
	echo "$tag: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}
