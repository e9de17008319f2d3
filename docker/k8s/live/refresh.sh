#!/bin/sh
# The refresh loop's two steps around calibrate merge (cronjob.yaml;
# docs/deploy.md, "Calibrating from live traffic"):
#
#   refresh.sh plan      links the components file the sidecars serve now,
#                        the one $CONFIG names under $COMPONENTS_DIR, as
#                        $WORK/base.safetensors (calibrate merge's --base)
#   refresh.sh publish   renames the merged $NEXT to a new name, replaces
#                        the old name by it in the ConfigMap $CONFIGMAP
#                        (optimistically: refused if the ConfigMap changed
#                        since it was read), and prunes old files
#
# It needs kubectl (in-cluster credentials: the ServiceAccount
# react-refresh may get and update that ConfigMap only) and a POSIX shell
# with sed, find, date, ln, mv, ls and rm.
set -eu

: "${CONFIG:=/etc/react/sidecar.yaml}"   # the sidecars' configuration, mounted
: "${CONFIGMAP:=react-sidecar}"          # the ConfigMap it comes from
: "${COMPONENTS_DIR:=/models/react}"     # where the components files are
: "${LIVE_DIR:=/var/lib/react/live}"     # where the sidecars write their statistics
: "${WORK:=/work}"                       # shared by the pod's steps
: "${NEXT:=$COMPONENTS_DIR/refresh.next.safetensors}"  # calibrate merge's --out
: "${RETENTION_DAYS:=7}"                 # live files older than this are deleted
: "${KEEP:=5}"                           # refreshed components files kept, the new one included
: "${KUBECTL:=kubectl}"

fail() { echo "refresh: $*" >&2; exit 1; }

# current FILE prints the first components path under $COMPONENTS_DIR that
# FILE names (a sidecar.yaml, or a ConfigMap holding one).
current() {
	sed -n "s|^[[:space:]]*path:[[:space:]]*\"\{0,1\}\($COMPONENTS_DIR/[^[:space:]\"]*\.safetensors\)\"\{0,1\}[[:space:]]*$|\1|p" "$1" | head -n 1
}

plan() {
	cur=$(current "$CONFIG")
	[ -n "$cur" ] || fail "$CONFIG names no components file under $COMPONENTS_DIR"
	[ -f "$cur" ] || fail "$cur, which $CONFIG names, does not exist"
	ln -sfn "$cur" "$WORK/base.safetensors"
	echo "refresh: base $cur"
}

publish() {
	[ -f "$NEXT" ] || fail "no merged file $NEXT: did calibrate merge run?"
	[ "$KEEP" -ge 2 ] || fail "KEEP=$KEEP: keep at least 2 files (the new one, and the one the sidecars serve until they reload)"
	$KUBECTL get configmap "$CONFIGMAP" -o yaml >"$WORK/configmap.yaml"
	cur=$(current "$WORK/configmap.yaml")
	[ -n "$cur" ] || fail "ConfigMap $CONFIGMAP names no components file under $COMPONENTS_DIR"
	base=$(readlink "$WORK/base.safetensors" || true)
	[ "$cur" = "$base" ] || fail "ConfigMap $CONFIGMAP names $cur, but the merge started from $base: someone rolled out meanwhile; the next run starts again"
	stamp=$(date -u +%Y%m%dT%H%M%SZ)
	new="$COMPONENTS_DIR/components-live-$stamp.safetensors"
	i=1
	while [ -e "$new" ]; do
		new="$COMPONENTS_DIR/components-live-$stamp-$i.safetensors"
		i=$((i + 1))
	done
	mv "$NEXT" "$new"
	# The ConfigMap as read, resourceVersion included, with the new path:
	# the API server refuses the update if it changed since.
	sed "s|$cur|$new|g" "$WORK/configmap.yaml" >"$WORK/configmap.new.yaml"
	$KUBECTL replace -f "$WORK/configmap.new.yaml"
	echo "refresh: $CONFIGMAP now names $new (was $cur); the sidecars reload it"

	find "$LIVE_DIR" -maxdepth 1 -name '*.live.safetensors' -mtime +"$RETENTION_DAYS" -print -exec rm -f {} +
	# The newest KEEP refreshed files stay; never the one being served.
	ls -1t "$COMPONENTS_DIR"/components-live-*.safetensors 2>/dev/null | tail -n +"$((KEEP + 1))" | while read -r old; do
		[ "$old" = "$new" ] || [ "$old" = "$cur" ] || { echo "refresh: removing $old"; rm -f "$old"; }
	done
}

case "${1:-}" in
plan) plan ;;
publish) publish ;;
*) fail "usage: refresh.sh plan|publish" ;;
esac
