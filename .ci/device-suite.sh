#!/usr/bin/env bash
# Run on the lent GPU machine (device tool): the case suite on CUDA, results under $OUT.
# Carried wheels (.whl) supply numpy<2.5 (numba-cuda 0.30.4 breaks on 2.5) and jsonschema.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import numpy, numba, cupy; print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"
start=$(date +%s.%N)
python3 -m pytest cases --backend cuda -q -p no:cacheprovider --results "$OUT/results-cuda.jsonl" --html "$OUT/cuda.html" "$@" 2>&1 | tee "$OUT/cuda-suite.log" | tail -40
end=$(date +%s.%N)
echo "cuda suite wall time: $(python3 -c "print(round($end-$start,1))") s"
python3 benchmarks/bench_gpu.py --out "$OUT/bench.json" 2>&1 | tail -40
python3 -m harness.cli report "$OUT/results-cuda.jsonl" -o "$OUT/cuda.html" --bench "$OUT/bench.json" | tail -2
