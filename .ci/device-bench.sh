#!/usr/bin/env bash
# Run on the lent GPU machine (device tool), from the project root: `harness bench` in two parts,
# each under the 10-minute limit of one device command, results under $OUT.
#   bash .ci/device-bench.sh table     the benchmark table and the host overhead of Engine.launch
#   bash .ci/device-bench.sh oracles   oracle cost: the axpy case through the runner at 2^12..2^24,
#                                      and the oracles on the axpy problem kept on the GPU at 2^12..2^28
# Carried wheels (.whl) supply numpy<2.5 and jsonschema, as for .ci/device-suite.sh.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
case "${1:-table}" in
  table)
    timeout 560 python3 -m harness.cli bench --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench-table.log" | tail -40 ;;
  oracles)
    timeout 560 python3 -m harness.cli bench --only axpy --no-jax --oracle-scaling 12,16,20,24 \
        --oracle-device 12,16,20,24,26,28 --out "$OUT/bench-oracles.json" 2>&1 | tee "$OUT/bench-oracles.log" | tail -30 ;;
  *) echo "usage: $0 table|oracles" >&2; exit 2 ;;
esac
