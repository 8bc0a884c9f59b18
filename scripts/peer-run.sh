#!/usr/bin/env bash
# The multi-GPU run on a machine with two or more GPUs (made for 2 H200s; about
# 4 minutes there, every step capped so the whole run ends within 8 minutes):
#   devices (peer topology), peer (N x N copies, kernels over the link, strided sweep, latency),
#   host-memory (zero-copy and managed), collectives (NCCL all-reduce / all-gather),
#   run-demos --device all --only memcpy coalescing (small sizes), hierarchy --device all.
#
# Usage: scripts/peer-run.sh MEMLAB OUT
#   MEMLAB  the memlab binary from `cargo xtask bundle DIR`
#   OUT     a folder for every output: one STEP.txt per step (stdout and stderr), peer.json,
#           peer-report/, run-gpuN.json, report-gpuN/
# Each step's command is printed first; a failing step does not stop the others, and the
# script exits 1 at the end if any failed (their names are listed).
set -u

if [ "$#" -ne 2 ]; then
    echo "usage: $0 MEMLAB OUT" >&2
    exit 2
fi
memlab=$1
out=$2
if [ ! -x "$memlab" ]; then
    echo "$0: $memlab is not an executable memlab binary" >&2
    exit 2
fi
mkdir -p "$out" || exit 2

start=$(date +%s)
budget=470   # seconds for all steps together (8 minutes less a margin)
failed=()

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with a time limit (never past the budget),
# output to the terminal and OUT/NAME.txt.
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 15 ]; then
        echo "== $name: skipped, the time budget is spent"
        failed+=("$name (not run: out of time)")
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name (limit ${limit}s): $*"
    timeout --signal=INT --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$name.txt"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc after $(($(date +%s) - start))s in all"
    if [ "$rc" -ne 0 ]; then
        failed+=("$name (exit $rc)")
    fi
}

nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1 || true
step devices 30 "$memlab" devices
step peer 110 "$memlab" peer --device all --json "$out/peer.json" --report "$out/peer-report"
step host-memory 60 "$memlab" host-memory --device all
step collectives 90 "$memlab" collectives --device all
step run-demos 60 "$memlab" run-demos --device all --only memcpy coalescing \
    --transpose 4096x4096 --strided-bytes 256MiB --json "$out/run.json" --report "$out/report"
step hierarchy 110 "$memlab" hierarchy --device all --ladder-max 128MiB --dram-bytes 256MiB \
    --transfer-bytes 64MiB

echo "== done in $(($(date +%s) - start))s; outputs in $out"
if [ "${#failed[@]}" -ne 0 ]; then
    printf '== failed: %s\n' "${failed[@]}"
    exit 1
fi
echo "== every step passed"
