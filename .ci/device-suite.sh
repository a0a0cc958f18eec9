#!/usr/bin/env bash
# Run on the lent GPU machine (device tool): the case suite on CUDA cold (every cache emptied first:
# generated kernels, numba's on-disk caches, the case-load cache, cupy's kernel cache) and then warm
# (the same command again), each with --harness-profile (docs/gpu.md, "Where the suite's time goes");
# then the benchmarks and the report, all under $OUT.
#   bash .ci/device-suite.sh -n 16                 # extra arguments go to every pytest run
#   SUITE_AB=1 bash .ci/device-suite.sh -n 16      # also cold and warm with xdist's old --dist load
#   SUITE_BENCH=0 ...                              # the suite only
#   SUITE_DEVICE_STATES=1 ...                      # also warm with every problem's states on the GPU
#                                                  # (HARNESS_HOST_STATE_LIMIT=0), for comparison
# Carried wheels (.whl) supply numpy<2.5 (numba-cuda 0.30.4 breaks on 2.5) and jsonschema.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
nproc
python3 -c "import numpy, numba, cupy; print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"

empty_caches() {
  rm -rf .cache/harness "${HOME:-/root}/.cupy/kernel_cache"
  find . -name '*.nbi' -delete -o -name '*.nbc' -delete
}

suite() {   # suite NAME [pytest arguments...]
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  python3 -m pytest cases --backend cuda -q -p no:cacheprovider -p no:benchmark -p no:hypothesispytest "$@" \
      --results "$OUT/results-$name.jsonl" --html "$OUT/$name.html" --harness-profile "$OUT/profile-$name.json" \
      > "$OUT/suite-$name.log" 2>&1
  end=$(date +%s.%N)
  grep -E "passed|failed|harness profile|^workers|^run seconds|^runs:|^kernels:|^distinct|^compile seconds" "$OUT/suite-$name.log" | tail -9
  echo "suite $name wall time: $(python3 -c "print(round($end-$start,1))") s"
}

empty_caches
suite cold "$@"
suite warm "$@"
grep -E "^(FAILED|ERROR)" "$OUT/suite-cold.log" | head -20
if [ "${SUITE_AB:-0}" = 1 ]; then          # the same with xdist's default scheduling, for comparison
  empty_caches
  suite cold-load "$@" --dist load
  suite warm-load "$@" --dist load
fi
if [ "${SUITE_DEVICE_STATES:-0}" = 1 ]; then   # small problems' oracles on cupy, as before
  HARNESS_HOST_STATE_LIMIT=0 suite warm-device-states "$@"
fi
python3 - "$OUT"/results-*.jsonl <<'EOF_PY'
import collections, json, sys     # the verdicts of every pass, and any run whose state differs
states = {}
for path in sys.argv[1:]:
    runs = [json.loads(line) for line in open(path)]
    states[path] = {r["run_id"]: r["state"] for r in runs if r.get("type") == "run"}
    print(path.rsplit("/", 1)[-1], dict(collections.Counter(states[path].values())))
first = next(iter(states.values()), {})
for path, other in states.items():
    for run_id in sorted(set(first) | set(other)):
        if first.get(run_id) != other.get(run_id):
            print("differs:", run_id, first.get(run_id), other.get(run_id), path)
EOF_PY
if [ "${SUITE_BENCH:-1}" != 0 ]; then
  python3 -m harness.cli bench --out "$OUT/bench.json" 2>&1 | tail -40
  python3 -m harness.cli report "$OUT/results-warm.jsonl" -o "$OUT/cuda.html" --bench "$OUT/bench.json" | tail -2
fi
