"""Differential fuzzing (harness/fuzz/differential.py, findings.py, reproducer.py): the grammar's
adapters profile, the judging of one kernel's runs across engines, the signatures, the reducer's
device-function edits, and the bounded campaign (marker `fuzz`, fixed seeds) in which a known
finding is an xfail and a new one fails."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness.fuzz.differential import judge_seed, profile_for
from harness.fuzz.findings import constructs
from harness.fuzz.grammar import PORTABLE_MATH, generate


def test_the_bundled_profile_is_the_old_grammar():
    for seed in range(60):
        assert generate(seed).source == generate(seed, "bundled").source
        assert generate(seed).args == generate(seed, "bundled").args


def test_adapters_profile_draws_what_the_adapters_express():
    for seed in range(200):
        fk = generate(seed, "adapters")
        assert not {"shared", "shuffle", "device-autodiff"} & set(fk.features), seed
        assert fk.args["a"]["activity"] == "const"
        used = set(re.findall(r"math\.(\w+)", fk.source))
        assert used <= PORTABLE_MATH, (seed, used - PORTABLE_MATH)
    assert profile_for(["bundled"]) == "bundled" and profile_for(["bundled", "taichi"]) == "adapters"


def test_judging_sides_with_finite_differences():
    results = {("bundled", "reverse", "float64"): ("pass", "", "reverse-float64"),
               ("warp", "reverse", "float64"): ("wrong-gradient", "fd-reverse", "reverse-float64@warp"),
               ("taichi", "reverse", "float64"): ("refusal", "while", "reverse-float64@taichi"),
               ("bundled", "forward", "float64"): ("wrong-gradient", "fd-forward", "forward-float64"),
               ("taichi", "forward", "float64"): ("pass", "", "forward-float64@taichi"),
               ("taichi", "forward", "float32"): ("crash", "TaichiSyntaxError", "forward-float32@taichi")}
    found = {(e, run): (kind, msg) for e, run, kind, msg in judge_seed(results)}
    assert found[("warp", "reverse-float64@warp")][1].startswith("finite differences side with bundled")
    assert found[("bundled", "forward-float64")][1].startswith("finite differences side with taichi")
    assert found[("taichi", "forward-float32@taichi")][0] == "crash"
    assert len(found) == 3                      # the pass and the refusal are no findings
    both = judge_seed({("bundled", "reverse", None): ("wrong-gradient", "x", "reverse"),
                       ("warp", "reverse", None): ("wrong-gradient", "y", "reverse@warp")})
    assert all(msg.startswith("both fail") for *_, msg in both) and len(both) == 2


def test_constructs_name_what_is_left():
    src = ("import math\nfrom numba import cuda\n\ndef h(a):\n    return math.sin(a)\n\n"
           "def kernel(x, acc, n):\n    i = cuda.grid(1)\n    for k in range(0, n, 2):\n        if k > 3:\n"
           "            break\n    cuda.atomic.max(acc, 0, h(x[i]))\n")
    assert constructs(src) == ["atomic-max", "break", "device-function", "dynamic-loop", "if", "sin", "stepped-range"]


def test_reducer_edits_reach_device_functions(tmp_path):
    from harness.tools.reduce import Candidate, ModuleContext, expression_edits, statement_edits
    path = tmp_path / "k.py"
    path.write_text("import math\n\ndef helper(a, b):\n    c = math.sin(a)\n    return c * b\n\n"
                    "def kernel(out, x):\n    out[0] = helper(x[0], 2.0)\n")
    module = ModuleContext(path, "kernel")
    cand = Candidate(module.function, {"args": {}}, module.helpers())
    texts = [d for d, _ in statement_edits(cand)] + [d for d, _ in expression_edits(cand)]
    assert any("c = math.sin(a)" in t for t in texts) and any("`math.sin(a)` -> `a`" in t for t in texts)
    edit = next(apply for d, apply in expression_edits(cand) if d.startswith("`math.sin(a)` -> `a`"))
    shrunk = cand.copy()
    assert edit(shrunk)
    out = module.source(shrunk.function, helpers=shrunk.helpers)
    assert "c = a" in out and "math.sin" not in out and "c = math.sin(a)" in module.source(cand.function, helpers=cand.helpers)


# Known findings (each an upstream-report candidate, docs/fuzz.md "Differential findings"): a bounded
# campaign's finding that matches one is an xfail of it; any other finding fails the test.
KNOWN = {
    "atomic max/min: the destination's initial value always gets the adjoint (Warp, Taichi)":
        lambda engine, kind, src, msg: engine in ("warp", "taichi") and kind == "wrong-gradient"
        and re.search(r"cuda\.atomic\.(max|min)", src) and "acc" in msg,
    "Taichi adapter: a stepped range(start, stop, step) reaches Taichi, which refuses it with a TaichiSyntaxError":
        lambda engine, kind, src, msg: engine == "taichi" and kind == "crash" and "Range should have 1 or 2" in msg,
}
BOUNDED_SEEDS = range(0, 200)


@pytest.mark.fuzz
@pytest.mark.parametrize("chunk", range(4))
def test_bounded_differential_fuzz(chunk, tmp_path, request):
    if "fuzz" not in (request.config.option.markexpr or ""):
        pytest.skip("the bounded fuzz runs when selected: pytest tests/slow/test_fuzz_differential.py -m fuzz")
    pytest.importorskip("warp")
    pytest.importorskip("taichi")
    from harness.fuzz.differential import run_seeds
    seeds = list(BOUNDED_SEEDS)[chunk::4]
    # a fixed folder for the generated kernels: their translations are then the same files from run
    # to run, so Warp's kernel cache and Taichi's offline cache compile each only once per machine
    work = Path(__file__).resolve().parents[2] / ".cache" / "harness" / "fuzz-bounded" / f"w{chunk}"
    tally = run_seeds(seeds, work, tmp_path / "f", ("bundled", "warp", "taichi"))
    assert tally.kernels == len(seeds)
    new, known = [], set()
    for seed, run, kind, msg, case in tally.findings:
        engine = run.rpartition("@")[2] if "@" in run else "bundled"
        src = generate(seed, "adapters").source
        hit = [name for name, match in KNOWN.items() if match(engine, kind, src, msg)]
        if hit:
            known.update(hit)
        else:
            new.append(f"seed {seed} {run}: {kind}: {msg[:200]}")
    assert not new, "new findings:\n" + "\n".join(new)
    if known:
        pytest.xfail("known findings only: " + "; ".join(sorted(known)))


def test_reducer_refuses_a_read_of_an_unassigned_local():
    from harness.tools.reduce import Candidate, _reads_unassigned
    kernel = (lambda src: Candidate(ast.parse(src).body[0], {}))
    assert _reads_unassigned(kernel("def k(out, x):\n    for j in range(5):\n        acc = acc * 0.3 + x[0]\n"
                                    "    out[0] = acc\n"))
    assert not _reads_unassigned(kernel("def k(out, x):\n    acc = 1.0\n    for j in range(5):\n"
                                        "        acc = acc * 0.3 + x[j]\n    out[0] = abs(acc)\n    out[0] += 1.0\n"))


def test_the_fuzzer_compiles_warp_modules_at_its_optimization_level(tmp_path):
    pytest.importorskip("warp")
    import warp as wp
    from harness.fuzz.differential import WARP_OPTIMIZATION_LEVEL, DifferentialFuzzer
    fuzzer = DifferentialFuzzer(tmp_path / "w", tmp_path / "f", ("warp",))
    adapter = fuzzer.runner.engine({}, "warp")
    assert adapter.optimization_level == WARP_OPTIMIZATION_LEVEL
    tally = fuzzer.run_seed(9)
    assert tally.engine_runs["warp pass"] + tally.engine_runs["warp wrong-gradient"] >= 1, tally.engine_runs
    modules = [m for m, _, _ in adapter._modules.values()]
    assert modules and all(wp.get_module(m.__name__).options["optimization_level"] == WARP_OPTIMIZATION_LEVEL
                           for m in modules)
