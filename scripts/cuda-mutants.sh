#!/usr/bin/env bash
# Mutation proof of the device tests under the CUDA emulator (docs/gpu.md,
# "The emulator"): each mutant is one deliberate bug in the cuda code (a
# transpose lost, the wrong triangle, a leading dimension off by one, a
# synchronisation or a context push removed, ...), applied with sed to a
# copy of the working tree; the device tests then run under the emulator,
# and the mutant is CAUGHT (they fail) or SURVIVED (they pass). The
# unmutated copy runs first and must pass.
#
#   scripts/cuda-mutants.sh              every mutant
#   scripts/cuda-mutants.sh NAME...      those named
#   scripts/cuda-mutants.sh --list       their names
#
# It prints a Markdown table, and exits non-zero if a mutant survived, did
# not apply (the code it edits changed: update its pattern), did not
# compile, or the unmutated tests failed. Needs make setup's .cache/cuda;
# builds the emulator (scripts/cuda-emulator.sh). About half a minute a
# mutant on two cores (the test binaries relink).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# name#file#sed program#what it breaks. The sed program runs on the
# file with sed -E; it must change it.
mutants=(
	"sgemm-op-n#react/internal/cuda/linalg.go#s/C\.CUBLAS_OP_T, C\.CUBLAS_OP_N/C.CUBLAS_OP_N, C.CUBLAS_OP_N/#SgemmTN without its transpose (CUBLAS_OP_T -> CUBLAS_OP_N)"
	"potrf-upper#react/internal/cuda/linalg.go#/func \(d \*Device\) Dpotrf\(/,/^}/s/CUBLAS_FILL_MODE_LOWER/CUBLAS_FILL_MODE_UPPER/#Dpotrf factorises the upper triangle"
	"symv-upper#react/internal/cuda/linalg.go#/func \(d \*Device\) Dsymv\(/,/^}/s/CUBLAS_FILL_MODE_LOWER/CUBLAS_FILL_MODE_UPPER/#Dsymv reads the upper triangle"
	"potrs-upper#react/internal/cuda/linalg.go#/func \(d \*Device\) Dpotrs\(/,/^}/s/CUBLAS_FILL_MODE_LOWER/CUBLAS_FILL_MODE_UPPER/#Dpotrs reads the upper triangle"
	"sgemm-ldc#react/internal/cuda/linalg.go#s/&zero, c\.c\(\), C\.int\(m\)\)/\&zero, c.c(), C.int(m+1))/#SgemmTN's ldc m -> m+1 (valid, but C runs past its buffer)"
	"sgemm-ldb#react/internal/cuda/linalg.go#s/b\.c\(\), C\.int\(k\), &zero/b.c(), C.int(n), \&zero/#SgemmTN's ldb k -> n"
	"potrs-ldb#react/internal/cuda/linalg.go#/func \(d \*Device\) Dpotrs\(/,/^}/s/b\.c\(\), C\.int\(n\)/b.c(), C.int(n+1)/#Dpotrs's ldb n -> n+1 (valid, but B runs past its buffer)"
	"potrs-ldb-short#react/internal/cuda/linalg.go#/func \(d \*Device\) Dpotrs\(/,/^}/s/b\.c\(\), C\.int\(n\)/b.c(), C.int(n-1)/#Dpotrs's ldb n -> n-1"
	"tf32#react/internal/cuda/device.go#s/C\.CUBLAS_DEFAULT_MATH/C.CUBLAS_TF32_TENSOR_OP_MATH/#SGEMM in TF32 (the math mode stated as TF32)"
	"no-sync-in-do#react/internal/cuda/device.go#s/C\.rc_cuStreamSynchronize\(l\.stream\)/C.CUresult(0)/#Device.Do does not synchronise its streams"
	"no-push-in-do#react/internal/cuda/device.go#s/C\.rc_cuCtxPushCurrent\(d\.ctx\)/C.CUresult(0)/#Device.Do does not push the context"
	"no-lock-os-thread#react/internal/cuda/device.go#/^func \(d \*Device\) Do\(/,/^}/{/runtime\.(Lock|Unlock)OSThread\(\)/d}#Device.Do does not lock its OS thread"
	"no-sync-in-download-int32#react/internal/cuda/device.go#/^func \(d \*Device\) DownloadInt32\(/,/^}/s/C\.rc_cuStreamSynchronize\(d\.cur\.stream\)/C.CUresult(0)/#DownloadInt32 reads the value before the copy ran"
	"no-sync-before-host-reuse#react/device_cuda.go#s/a\.dev\.Sync\(\); err != nil \{ \/\/ host is reused/error(nil); err != nil { \/\/ host is reused/#Load reuses its host buffer before the upload of A_t ran"
	"no-aux-wait#react/device_cuda.go#s/dev\.AuxWaitsMain\(\)/error(nil)/#the aux lane does not wait for main (C_p's copy)"
	"round-stride#react/internal/cuda/kernels.go#s/shl\.b64 %rd10, %rd5, 2;/shl.b64 %rd10, %rd5, 3;/#the rounding kernel stores float32 at a stride of 8 bytes"
	"trsv-upper#react/internal/cuda/linalg.go#/func \(d \*Device\) Dcholsolve\(/,/^}/s/CUBLAS_FILL_MODE_LOWER/CUBLAS_FILL_MODE_UPPER/#Dcholsolve's solves read the upper triangle"
	"trsv-no-transpose#react/internal/cuda/linalg.go#/func \(d \*Device\) Dcholsolve\(/,/^}/s/C\.CUBLAS_OP_T/C.CUBLAS_OP_N/#Dcholsolve's second solve is L, not Lᵀ"
	"round-flag#react/internal/cuda/kernels.go#s/@!%p2 st\.global\.u32/@%p2 st.global.u32/#the rounding kernel flags the values in range"
)

if [ "${1:-}" = "--list" ]; then
	for m in "${mutants[@]}"; do
		IFS='#' read -r name file prog what <<<"$m"
		printf '%-28s %s\n' "$name" "$what"
	done
	exit 0
fi
selected=("$@")

bash scripts/cuda-emulator.sh >/dev/null

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuda-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A copy of the working tree (tracked and untracked files git does not
# ignore), with the repository's .cache (the CUDA headers) linked in.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$tmp"
ln -s "$root/.cache" "$tmp/.cache"

pkgs=(./react/ ./react/internal/cuda/ ./control/ ./backend/model/)
run='Device|TestOpen$|TestErrorNames|TestCheckRange|TestDsymv|TestDcholsolve'
# runtests DIR LOG: the device tests under the emulator.
runtests() {
	(cd "$1" && LD_LIBRARY_PATH="$root/.cache/cudaemu" REACT_TEST_BACKEND=cuda REACT_CUDA_EXPECT=emulator \
		timeout 600 go test -count=1 -v -tags cuda -run "$run" "${pkgs[@]}") >"$2" 2>&1
}

echo "cuda-mutants: the unmutated tests" >&2
start=$SECONDS
if ! runtests "$tmp" "$tmp/baseline.log"; then
	cat "$tmp/baseline.log" >&2
	echo "cuda-mutants: the unmutated device tests fail under the emulator: no mutant means anything" >&2
	exit 1
fi
echo "cuda-mutants: unmutated: pass ($((SECONDS - start)) s)" >&2

status=0
rows=()
for m in "${mutants[@]}"; do
	IFS='#' read -r name file prog what <<<"$m"
	if [ "${#selected[@]}" -gt 0 ] && ! printf '%s\n' "${selected[@]}" | grep -qx "$name"; then
		continue
	fi
	cp "$root/$file" "$tmp/$file"
	sed -E -i "$prog" "$tmp/$file"
	start=$SECONDS
	if cmp -s "$root/$file" "$tmp/$file"; then
		result="NOT APPLIED (update its pattern)"
		status=1
	elif ! (cd "$tmp" && go vet -tags cuda ./react/... >"$tmp/$name.log" 2>&1); then
		result="DOES NOT COMPILE"
		status=1
	elif runtests "$tmp" "$tmp/$name.log"; then
		result="SURVIVED"
		status=1
	else
		# Which test failed first (its first failing subtest), or was
		# running when the emulator aborted the process; then the first
		# thing the emulator refused in it, else its first message.
		log=$tmp/$name.log
		test=$(awk '/^--- FAIL: / { top = $3; if ((getline) > 0 && $0 ~ /^ +--- FAIL: /) top = $3; print top; exit }' "$log")
		if grep -q '^SIGABRT' "$log"; then
			test=$(sed -n '/^SIGABRT/q; s/^=== RUN *//p' "$log" | tail -n 1)
		fi
		why=$(awk -v head="=== RUN   $test" '
			$0 == head { on = 1; next }
			on && (/^=== RUN/ || /^--- /) { exit }
			on && emu == "" && /^cuda-emulator: .*(ILLEGAL|FAULT|no context|STATUS|past the end|not a device)/ { emu = $0 }
			on && msg == "" && /^ +[A-Za-z0-9_]+\.go:[0-9]+: / { msg = $0 }
			END { print (emu != "" ? emu : msg) }' "$log" |
			sed -E 's/^ +//; s/ \(thread [0-9]+\)//; s/ at 0x[0-9a-f]+//g; s/\|/\\|/g')
		if [ -z "$test" ]; then
			# Before any test: TestMain's UseBackend, or an abort there.
			test="the start (TestMain)"
			why=$(grep -m1 -E '^cuda-emulator: .*(ILLEGAL|FAULT|no context|STATUS|past the end|not a device)' "$log" |
				sed -E 's/ \(thread [0-9]+\)//; s/ at 0x[0-9a-f]+//g; s/\|/\\|/g' || true)
		fi
		grep -q '^SIGABRT' "$log" && test="$test (aborted)"
		[ "${#why}" -le 120 ] || why="${why:0:117}..."
		result="CAUGHT by ${test:-a test}: ${why:-the tests failed}"
	fi
	cp "$root/$file" "$tmp/$file"
	echo "cuda-mutants: $name: $result ($((SECONDS - start)) s)" >&2
	rows+=("| \`$name\` | $what | $result |")
done

echo "| mutant | the bug | under the emulator |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$status"
