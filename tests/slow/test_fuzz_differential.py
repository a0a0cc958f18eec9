"""Differential fuzzing (harness/fuzz/differential.py, findings.py, reproducer.py): the grammar's
adapters profile, the judging of one kernel's runs across engines, the signatures, the reducer's
device-function edits, and the bounded campaign (marker `fuzz`, fixed seeds) in which a known
finding is an xfail and a new one fails."""
from __future__ import annotations

import ast
import os
import re
import time
from pathlib import Path

import pytest

from harness.fuzz.differential import judge_seed, profile_for
from harness.fuzz.findings import constructs
from harness.fuzz.known import KNOWN
from harness.fuzz.grammar import PORTABLE_MATH, generate

ROOT = Path(__file__).resolve().parents[2]


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
    # Warp and Taichi wrong where the bundled engine passes: the oracle is not the suspect
    sided = judge_seed({("bundled", "reverse", None): ("pass", "", "reverse"),
                        ("warp", "reverse", None): ("wrong-gradient", "x", "reverse@warp"),
                        ("taichi", "reverse", None): ("wrong-gradient", "y", "reverse@taichi")})
    assert sorted(msg for *_, msg in sided) == ["finite differences side with bundled (taichi wrong too): x",
                                                  "finite differences side with bundled (warp wrong too): y"]


def test_constructs_name_what_is_left():
    src = ("import math\nfrom numba import cuda\n\ndef h(a):\n    return math.sin(a)\n\n"
           "def kernel(x, acc, n):\n    i = cuda.grid(1)\n    for k in range(0, n, 2):\n        if k > 3:\n"
           "            break\n    cuda.atomic.max(acc, 0, h(x[i]))\n")
    assert constructs(src) == ["atomic-max", "break", "device-function", "dynamic-loop", "if", "sin", "stepped-range"]
    # a grid-stride loop is not a dynamic loop of the body (Warp's dynamic-loop class needs one there)
    grid_stride = ("import math\nfrom numba import cuda\n\ndef kernel(out, x, n):\n"
                   "    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):\n"
                   "        for k in range(4):\n            out[i] = math.tanh(x[i])\n")
    assert constructs(grid_stride) == ["grid-stride", "static-loop", "tanh"]
    assert "dynamic-loop" in constructs(grid_stride.replace("range(4)", "range(n)"))


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


# The bounded campaign CI runs (tox env engines-ci; marker `fuzz`): every seed's kernel through the
# bundled engine and Warp, every second one through Taichi too (Taichi costs several times Warp's
# compile and launch time a kernel), on a LocalCluster of two Dask workers, so a seed that kills
# its worker (Taichi dies with SIGBUS on some kernels) reruns with the adapters isolated and becomes
# a crash finding of the engine that died. Warp's kernel cache and Taichi's offline cache are fresh
# folders, as on a fresh clone.
BOUNDED_SEEDS = range(0, 200)
TAICHI_EVERY = 2


def bounded_plan(seeds=BOUNDED_SEEDS) -> dict:
    """seed -> engines of the bounded campaign."""
    return {s: ("bundled", "warp", "taichi") if s % TAICHI_EVERY == 0 else ("bundled", "warp") for s in seeds}


def test_known_findings_are_cases_with_the_engines_xfail():
    from harness.cases import load_case_file
    for known in KNOWN:
        doc = known.document()
        assert "xfail" in doc["engines"][known.engine]["expect"], known
        assert set(known.modes) <= set(doc.get("modes", ["primal", "forward", "reverse"])), known
        assert known.requires and known.requires <= known.kernel_constructs(), (known, known.kernel_constructs())
        assert load_case_file(ROOT / "cases" / f"{known.case}.yaml", ROOT)


def test_a_known_finding_matches_by_engine_mode_oracle_and_constructs():
    known = KNOWN[0]
    assert known.matches(("warp", "reverse", "zero", ("atomic-max", "if", "while")))
    assert not known.matches(("taichi", "reverse", "zero", ("atomic-max",)))
    assert not known.matches(("warp", "reverse", "fd-reverse", ("atomic-max",)))
    assert not known.matches(("warp", "forward", "zero", ("atomic-max",)))
    assert not known.matches(("warp", "reverse", "zero", ("atomic-min", "while")))


@pytest.mark.fuzz
def test_bounded_differential_fuzz(tmp_path, monkeypatch, request):
    if "fuzz" not in (request.config.option.markexpr or ""):
        pytest.skip("the bounded fuzz runs when selected: pytest tests/slow/test_fuzz_differential.py -m fuzz")
    pytest.importorskip("warp")
    pytest.importorskip("taichi")
    pytest.importorskip("distributed")
    from harness.fuzz.distributed import run_on_dask
    from harness.fuzz.findings import first_signature, saved_findings
    monkeypatch.setenv("WARP_CACHE_PATH", str(tmp_path / "warp-cache"))          # as on a fresh clone
    monkeypatch.setenv("TI_OFFLINE_CACHE_FILE_PATH", str(tmp_path / "taichi-cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    plan = bounded_plan()
    started = time.time()
    tally = run_on_dask(list(plan), tmp_path / "work", tmp_path / "findings", ("bundled", "warp"), "sim",
                        tmp_path / "log.jsonl", workers=2, engines_of=plan, say=lambda s: None)
    seconds = time.time() - started
    adapter_kernels = sum(len(set(e) - {"bundled"}) for e in plan.values())
    print(f"bounded differential fuzz: {tally.kernels} kernels ({adapter_kernels} adapter kernels), "
          f"{tally.runs} runs, {len(tally.findings)} findings, {seconds:.0f} s")
    assert tally.kernels == len(plan) and adapter_kernels >= 200
    dead = [f for f in tally.findings if f[2] == "worker-died"]
    assert not dead, f"seeds whose every run killed a worker: {dead}"
    new, known = [], set()
    for finding in saved_findings(tmp_path / "findings"):
        signature = first_signature(finding)
        hit = [k.case for k in KNOWN if k.matches(signature)]
        if hit:
            known.update(hit)
        else:
            new.append(f"{finding.case.stem} {finding.run}: {signature}: {finding.message[:200]}")
    assert not new, "new findings (triage them: harness fuzz --triage):\n" + "\n".join(new)
    assert known or not tally.findings
    if known:
        pytest.xfail("known findings only, each an xfail of its case: " + ", ".join(sorted(known)))


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
    modules = [entry[0] for entry in adapter._modules.values()]
    assert modules and all(wp.get_module(m.__name__).options["optimization_level"] == WARP_OPTIMIZATION_LEVEL
                           for m in modules)


def test_reducing_through_an_adapter_refuses_an_edit_that_indexes_past_an_array(tmp_path, launching_backend):
    """Warp's and Taichi's CPU devices do not check bounds: a reduction through an adapter keeps a
    candidate only if numba's own primal of it runs on the simulator (which checks them)."""
    if launching_backend.name != "sim":
        pytest.skip("the reducer runs on the simulator")
    from types import SimpleNamespace

    from harness.execution.runner import Runner
    from harness.tools.reduce import Candidate, ModuleContext, Reducer
    path = tmp_path / "kernels" / "k.py"
    path.parent.mkdir()
    path.write_text("from numba import cuda\n\n\ndef kernel(out, y):\n    i = cuda.grid(1)\n"
                    "    if i < out.shape[0]:\n        out[i] = y[(i + 1) % 8]\n")
    arr = {"array": {"shape": [8], "dtype": "float64", "init": "normal"}, "activity": "duplicated"}
    case = {"id": "k", "kernel": "kernels/k.py:kernel", "launch": {"threads": 8, "block": 8},
            "args": {"out": arr, "y": arr}, "modes": ["reverse"], "dtypes": ["float64"]}
    module = ModuleContext(path, "kernel")
    run = SimpleNamespace(engine="taichi", backend="sim", case=SimpleNamespace(id="k"))
    reducer = Reducer(tmp_path, run, Runner(tmp_path, "sim"), module, case, log=lambda s: None)
    try:
        inside = Candidate(module.function, case, module.helpers())
        assert reducer._numba_primal_runs(inside)
        past = inside.copy()
        past.function.body[1].body[0].value.slice = ast.parse("i + 1", mode="eval").body
        assert not reducer._numba_primal_runs(past)
    finally:
        reducer.cleanup()


def _saved_finding(folder: Path, stem: str, source: str, found: str) -> None:
    (folder / "kernels").mkdir(parents=True, exist_ok=True)
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    (folder / "kernels" / f"{stem}.py").write_text(source)
    (folder / "cases" / f"{stem}.yaml").write_text(
        f"id: {stem}\nkernel: kernels/{stem}.py:kernel\ndescription: 'Generated. Found: {found}'\n")


def test_triage_groups_findings_by_the_known_classes_they_could_be(tmp_path):
    """Findings whose kernels could be the same known bugs are one group (one reduction), whatever
    else their kernels hold; a finding no known class explains keeps its whole signature."""
    from harness.fuzz.findings import first_signature, group_key, saved_findings
    head = "import math\nfrom numba import cuda\n\ndef kernel(x, acc):\n    i = cuda.grid(1)\n"
    _saved_finding(tmp_path, "fuzz-1-warp-wrong-gradient", head + "    cuda.atomic.max(acc, 0, x[i])\n",
                   "reverse-float64@warp: both fail: zero: gradient is zero")
    _saved_finding(tmp_path, "fuzz-2-warp-wrong-gradient", head + "    cuda.atomic.max(acc, 0, math.sin(x[i]))\n",
                   "reverse-float32@warp: finite differences side with bundled: zero: gradient is zero")
    _saved_finding(tmp_path, "fuzz-3-warp-wrong-gradient", head + "    acc[i] = math.sin(x[i])\n",
                   "reverse-float64@warp: finite differences side with bundled: fd-reverse: AD 1 vs FD 2")
    keys = {f.case.stem: group_key(f, first_signature(f)) for f in saved_findings(tmp_path)}
    assert keys["fuzz-1-warp-wrong-gradient"] == keys["fuzz-2-warp-wrong-gradient"] == \
        ("warp", "reverse", "zero", ("known:", "fuzz-adapters-atomic-max-destination"))
    assert keys["fuzz-3-warp-wrong-gradient"] == ("warp", "reverse", "fd-reverse", ("sin",))


def test_triage_sets_apart_findings_that_pass_today():
    from harness.fuzz.findings import campaign_page, reproduces
    assert reproduces("FAIL; failing fd-reverse") and reproduces("ZERO; failing zero") and reproduces("ERROR; error X")
    assert not reproduces("PASS") and not reproduces("UNSUPPORTED; error UnsupportedError")
    page = campaign_page([], None, gone=[{"group": ("bundled",), "seeds": ["fuzz-1374-bundled-wrong-gradient"],
                                         "target": "PASS"}])
    assert "no longer reproduce" in page and "fuzz-1374-bundled-wrong-gradient | PASS" in page


def test_a_reproducers_verdict_is_not_hidden_by_the_systems_banners(tmp_path):
    from harness.fuzz.findings import run_reproducer
    script = tmp_path / "repro.py"
    script.write_text("import sys\nprint('relative error 4.66: WRONG DERIVATIVE')\n"
                      "print('Warp CUDA warning: Could not find or load the NVIDIA CUDA driver.', file=sys.stderr)\n"
                      "sys.exit(1)\n")
    code, said = run_reproducer(script)
    assert code == 1 and said.splitlines()[-1] == "relative error 4.66: WRONG DERIVATIVE"


def test_the_campaign_page_counts_findings_by_known_class():
    from harness.fuzz.findings import by_known_class, campaign_page
    groups = {("warp", "reverse", "zero", ("known:", "a")): [1, 2, 3],
              ("warp", "reverse", "zero", ("known:", "a", "b")): [4],
              ("warp", "reverse", "fd-reverse", ("sin",)): [5]}
    counted = by_known_class(groups)
    assert counted == [("warp", "a", 4, 3), ("warp", "b", 1, 0)]
    assert "| warp | `a` | 4 | 3 |" in campaign_page([], None, known=counted)
