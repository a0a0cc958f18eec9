#!/usr/bin/env bash
# The Warp and Taichi adapters on the lent GPU machine (docs/engines.md, "On the GPU").
#
# The Warp wheel (149 MB) is larger than one call of the device tool carries (64 MiB), so the
# wheels travel in parts over several calls to the same warm machine, each carried as the ignored
# folder .engine-wheels/ and put aside by `stage`; `run` reassembles, checks and installs them:
#
#   bash .ci/device-engines.sh stage        # once per call, with a part in .engine-wheels/
#   [ENGINES=taichi|warp] bash .ci/device-engines.sh run [pytest args]      # e.g. -n 14
#
# On cuda every Warp/Taichi run runs in a child process of its own (HARNESS_ISOLATE_ENGINES=auto):
# a CUDA fault is one ERROR "fault: ..." for that run and cannot poison the others.
#
# Files (cp312, manylinux x86_64; sha256 in .ci/engine-wheels.sha256):
#   warp_lang-1.19.0-py3-none-manylinux_2_28_x86_64.whl   149,277,474 bytes, split in 48 MiB parts
#   taichi-1.7.4-cp312-cp312-manylinux_2_27_x86_64.whl      56,298,504 bytes
#   colorama, dill, rich, markdown_it_py, mdurl, pygments (taichi's pure-Python dependencies, 1.8 MB)
# Made with: pip download --no-deps --python-version 3.12 --only-binary=:all: \
#   --platform manylinux_2_28_x86_64 warp-lang (taichi: manylinux_2_27_x86_64) -d DIR; split -b 48M -d
set -u
STAGE="${HOME:-/root}/engine-wheels"
mkdir -p "$STAGE"
cd "$(dirname "$0")/.."
REPO="$PWD"

case "${1:-}" in
stage)
  cp -v .engine-wheels/* "$STAGE"/ 2>/dev/null || echo "device-engines: nothing in .engine-wheels/ to stage"
  ls -la "$STAGE"
  exit 0 ;;
run)
  shift ;;
*)
  echo "usage: $0 stage | run [pytest args]" >&2
  exit 2 ;;
esac

cp .engine-wheels/* "$STAGE"/ 2>/dev/null || true
for part0 in "$STAGE"/*.part-00; do
  [ -e "$part0" ] && cat "${part0%.part-00}".part-* > "${part0%.part-00}"
done
(cd "$STAGE" && sha256sum -c "$REPO/.ci/engine-wheels.sha256") || { echo "device-engines: a wheel is missing or damaged"; exit 1; }

# The project's own carried wheels (numpy<2.5, jsonschema: see .ci/device-suite.sh) go first.
SITE=/tmp/site-engines
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    $(ls .whl/*.whl 2>/dev/null) "$STAGE"/*.whl || exit 1
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import warp, taichi; print('warp', warp.__version__, 'taichi', taichi.__version__)" 2>&1 | tail -2
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
start=$(date +%s)
ENGINES="${ENGINES:-warp,taichi}"          # ENGINES=taichi / ENGINES=warp: one engine per call (10-minute calls)
TAG="${ENGINES//,/-}"
# Plain Taichi first (about a minute): is the H200's illegal address the loop-inside-if bug?
case "$ENGINES" in *taichi*) timeout 100 python3 -m harness.adapters.taichi_repro cuda 2>&1 | tee "$OUT/taichi-repro.txt" ;; esac
# bounded so that the table and the fault list still come back within one 10-minute call
timeout "${PYTEST_LIMIT:-380}" python3 -m pytest cases --backend cuda --engine "$ENGINES" -q -p no:cacheprovider -p no:benchmark "$@" \
    --results "$OUT/results-engines-cuda-$TAG.jsonl" --html "$OUT/engines-cuda-$TAG.html" > "$OUT/engines-cuda-$TAG.log" 2>&1
echo "pytest exit $? after $(( $(date +%s) - start )) s"
tail -4 "$OUT/engines-cuda-$TAG.log"
python3 -m harness.adapters.table "$OUT/results-engines-cuda-$TAG.jsonl" | tee "$OUT/engines-cuda-$TAG-table.md"
# Each adapter run ran in a process of its own (harness/adapters/isolation.py): a device fault is one
# ERROR "fault: ..." for the run that caused it. List them.
python3 - "$OUT/results-engines-cuda-$TAG.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
faults = [r for r in runs if r.get("state") == "ERROR" and (r.get("message") or "").startswith("fault:")]
errors = [r for r in runs if r.get("state") == "ERROR" and r not in faults]
print(f"device faults: {len(faults)} runs; other errors: {len(errors)}")
for r in faults + errors:
    print(" ", r["run_id"], "|", (r.get("message") or "")[:200].replace("\n", " "))
PY
