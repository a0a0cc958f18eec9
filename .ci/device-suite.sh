#!/usr/bin/env bash
# Run on the lent GPU machine (device tool): the case suite on CUDA twice (the second run should
# load every kernel from numba's on-disk cache), the benchmarks, and the report, all under $OUT.
# Carried wheels (.whl) supply numpy<2.5 (numba-cuda 0.30.4 breaks on 2.5) and jsonschema.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import numpy, numba, cupy; print('numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"
for pass in 1 2; do
  start=$(date +%s.%N)
  python3 -m pytest cases --backend cuda -q -p no:cacheprovider -p no:benchmark "$@" \
      --results "$OUT/results-cuda-$pass.jsonl" --html "$OUT/cuda-$pass.html" > "$OUT/cuda-suite-$pass.log" 2>&1
  end=$(date +%s.%N)
  tail -4 "$OUT/cuda-suite-$pass.log"
  echo "cuda suite pass $pass wall time: $(python3 -c "print(round($end-$start,1))") s"
done
grep -E "^(FAILED|ERROR)" "$OUT/cuda-suite-1.log" | head -20
python3 -m harness.cli bench --out "$OUT/bench.json" 2>&1 | tail -40
python3 -m harness.cli report "$OUT/results-cuda-2.jsonl" -o "$OUT/cuda.html" --bench "$OUT/bench.json" | tail -2
