#!/usr/bin/env bash
# Run on the lent GPU machine (device tool), from the project root: `harness bench` in parts, each
# under the 10-minute limit of one device command, results under $OUT.
#   bash .ci/device-bench.sh table          the benchmark table and the host overhead of Engine.launch
#   bash .ci/device-bench.sh oracles        one axpy case (forward and reverse, every oracle and
#                                           relation) checked through the runner at 2^12..2^28, split
#                                           into setup, oracles, relations and kernel launches
#   bash .ci/device-bench.sh oracle-device  the oracles alone on an axpy problem kept on the GPU, 2^12..2^28
#   bash .ci/device-bench.sh blocks         the block-level benches (barriers in block-uniform loops):
#                                           tiled matmul vs hand tiled adjoint and cuBLAS, tree reduction
#                                           vs hand, n-body vs hand and JAX; then their PTX counts
# Carried wheels (.whl) supply numpy<2.5 and jsonschema, as for .ci/device-suite.sh.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HARNESS_RUN_TIMEOUT=0
nvidia-smi -L
case "${1:-table}" in
  table)
    timeout 560 python3 -m harness.cli bench --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench-table.log" | tail -40 ;;
  oracles)
    timeout 560 python3 -m harness.cli bench --only axpy --no-jax --oracle-scaling "${2:-12,16,20,24,26,28}" \
        --out "$OUT/bench-oracles.json" 2>&1 | tee "$OUT/bench-oracles.log" | tail -30 ;;
  oracle-device)
    timeout 560 python3 -m harness.cli bench --only axpy --no-jax --oracle-device "${2:-12,16,20,24,26,28}" \
        --out "$OUT/bench-oracle-device.json" 2>&1 | tee "$OUT/bench-oracle-device.log" | tail -30 ;;
  blocks)
    timeout 480 python3 -m harness.cli bench --only tiled_matmul,tree_sum_while,nbody_tiles \
        --out "$OUT/bench-blocks.json" 2>&1 | tee "$OUT/bench-blocks.log" | tail -40
    timeout 100 python3 benchmarks/ptx_stats.py --only tiled_matmul,tree_sum_while,nbody_tiles 2>&1 \
        | tee "$OUT/ptx-blocks.log" ;;
  *) echo "usage: $0 table|oracles|oracle-device|blocks [K,K,...]" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=memory.used,memory.total --format=csv
