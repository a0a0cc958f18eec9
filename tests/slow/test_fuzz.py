"""The kernel fuzzer (harness/fuzz/): reproducible generation, classification of outcomes, and the
bounded fuzz CI runs: 300 generated kernels (fixed seeds), forward and reverse on the simulator,
must give no wrong gradient and no crash (clear refusals are fine).

The bounded fuzz is marked `fuzz` and runs only when selected (`pytest tests/slow/test_fuzz.py -m fuzz
-n 2`, a step of tox env `ci`), so a plain `pytest tests` stays quick."""
from __future__ import annotations

import ast

import pytest

from harness.fuzz.campaign import Tally, classify, refusal_reason
from harness.fuzz.grammar import generate
from harness.model import ErrorRecord

CI_SEEDS = 300            # kernels in the bounded fuzz
CI_CHUNKS = 10            # xdist spreads the chunks over its workers
PRODUCTIONS = {"grid1", "grid2", "shared", "grid-stride", "shuffle", "rule", "branch", "ternary", "early-return", "static-loop",
               "dynamic-loop", "while-loop", "break", "continue", "in-place", "device-helper", "atomic", "atomic-old",
               "alias"}


def test_generation_is_reproducible_and_parses():
    for seed in range(40):
        a, b = generate(seed), generate(seed)
        assert a.source == b.source and a.args == b.args and a.launch == b.launch
        ast.parse(a.source)
    assert generate(1).source != generate(2).source


def test_ci_seeds_cover_every_production():
    seen = set()
    for seed in range(CI_SEEDS):
        seen |= set(generate(seed).features)
    assert PRODUCTIONS <= seen, f"productions the CI seeds never generate: {sorted(PRODUCTIONS - seen)}"


class _Outcome:
    def __init__(self, state, error=None, message=""):
        self.state, self.error, self.message = state, error, message


def test_classify_outcomes():
    assert classify(_Outcome("PASS")) == ("pass", "")
    kind, why = classify(_Outcome("ERROR", ErrorRecord("UnsupportedError", "/a/k.py:12: dynamic loop at line 12")))
    assert kind == "refusal" and why == "dynamic loop at line N"
    assert classify(_Outcome("FAIL", None, "fd-reverse: differs"))[0] == "wrong-gradient"
    assert classify(_Outcome("ZERO", None, "all zero"))[0] == "wrong-gradient"
    smooth = "fd-forward: differs; finite differences change with the step size (444 x tol)"
    assert classify(_Outcome("FAIL", None, smooth))[0] == "inconclusive"
    assert classify(_Outcome("FAIL", None, smooth + "; dot: forward and reverse disagree"))[0] == "wrong-gradient"
    assert classify(_Outcome("ERROR", ErrorRecord("NameError", "x")))[0] == "crash"
    assert refusal_reason("/x/y.py:3: 'out' is read at `i + 1`") == "'_' is read at '_'"


def test_tally_round_trips_through_json():
    t = Tally(kernels=2, runs=4, passes=3, seconds=1.5)
    t.refusals["r"] += 1
    t.findings.append((7, "reverse", "crash", "boom", "p"))
    assert Tally.from_json(t.to_json()).to_json() == t.to_json()


def test_a_resumed_campaign_runs_each_seed_once(tmp_path, launching_backend, capsys):
    """`--log` lines name their seed; `--resume` skips the logged ones and `--summarize` counts a
    seed once however many logs were concatenated (a campaign split over machines)."""
    if launching_backend.name != "sim":
        pytest.skip("the fuzzer runs on the simulator")
    import json

    from harness.cli import main
    log = tmp_path / "log.jsonl"
    common = ["fuzz", "--seed", "10", "--findings", str(tmp_path / "f"), "--log", str(log)]
    main(common + ["--count", "2"])
    main(common + ["--count", "3", "--resume"])
    assert [json.loads(line)["seed"] for line in log.read_text().splitlines()] == [10, 11, 12]
    log.write_text(log.read_text() * 2)
    capsys.readouterr()
    main(["fuzz", "--summarize", str(log)])
    assert capsys.readouterr().out.startswith("3 kernels")


@pytest.mark.fuzz
@pytest.mark.parametrize("chunk", range(CI_CHUNKS))
def test_bounded_fuzz_finds_nothing(chunk, tmp_path, launching_backend, request):
    if "fuzz" not in (request.config.option.markexpr or ""):
        pytest.skip("the bounded fuzz runs when selected: pytest tests/slow/test_fuzz.py -m fuzz (tox env ci does)")
    if launching_backend.name != "sim":
        pytest.skip("the bounded fuzz runs on the simulator")
    from harness.fuzz.campaign import run_seeds
    per = CI_SEEDS // CI_CHUNKS
    tally = run_seeds(range(chunk * per, (chunk + 1) * per), tmp_path / "work", tmp_path / "findings")
    assert tally.kernels == per and tally.runs >= per        # device-side autodiff kernels: one run
    assert not tally.findings, tally.summary()


def test_any_seed_gives_a_kernel_and_a_valid_case():
    """Property (hypothesis): whatever the seed, the kernel parses, names exactly the case's
    arguments in order, and the case document passes the case loader (schema and semantics)."""
    import tempfile
    from pathlib import Path

    from hypothesis import given, settings, strategies as st

    from harness.cases import load_case_file
    from harness.fuzz.campaign import write_kernel

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(st.integers(min_value=0, max_value=2 ** 40))
    def check(seed):
        fk = generate(seed)
        tree = ast.parse(fk.source)
        kernel = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "kernel")
        assert [a.arg for a in kernel.args.args] == list(fk.args)
        with tempfile.TemporaryDirectory() as tmp:
            [case, *_] = load_case_file(write_kernel(Path(tmp), fk, f"fz_{seed}"), Path(tmp))
            assert [a.name for a in case.args] == list(fk.args)
    check()


def test_a_planted_wrong_rule_is_found_and_saved(tmp_path, launching_backend, monkeypatch):
    """The fuzzer can fail: with sin's rule negated, a kernel calling sin is a finding in both modes,
    saved as a case plus kernel file that the case loader accepts."""
    if launching_backend.name != "sim":
        pytest.skip("the fuzzer runs on the simulator")
    from pathlib import Path

    from harness.cases import load_case_file
    from harness.engine.rules import table as rules
    from harness.fuzz import campaign
    from harness.fuzz.grammar import FuzzKernel

    source = ("import math\n\nfrom numba import cuda\n\n\ndef kernel(out, x):\n    i = cuda.grid(1)\n"
              "    if i < out.shape[0]:\n        out[i] = math.sin(x[i]) + 0.5 * x[i]\n")
    arr = (lambda init: {"array": {"shape": [8], "dtype": "float64", "init": init}, "activity": "duplicated"})
    planted = FuzzKernel(7, source, {"out": arr("zeros"), "x": arr("normal")}, {"threads": 8, "block": 8},
                         ["float64"], ["rule"])
    monkeypatch.setattr(campaign, "generate", lambda seed: planted)
    monkeypatch.setitem(rules.PARTIALS, "sin", ("-cos(x)",))
    tally = campaign.run_seeds([7], tmp_path / "work", tmp_path / "findings")
    assert (tally.runs, tally.passes) == (2, 0)
    assert sorted((f[1], f[2]) for f in tally.findings) == [("forward", "wrong-gradient"), ("reverse", "wrong-gradient")]
    saved = Path(tally.findings[0][4])
    assert saved.name == "fuzz-7-wrong-gradient.yaml" and (saved.parent.parent / "kernels" / "fuzz-7-wrong-gradient.py").exists()
    [case] = load_case_file(saved, saved.parent.parent)
    assert "fd-" in case.description and case.seed == 7


def _children(pid: int) -> list[int]:
    from pathlib import Path
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="needs /proc to find the workers")
def test_killed_campaign_leaves_no_worker_running(tmp_path):
    """`kill` of a `harness fuzz -j 2` campaign ends its pool workers too (they used to keep fuzzing)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli import main; main()", "fuzz",
                             "--count", "10000", "-j", "2", "--findings", str(tmp_path / "f")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    workers: list[int] = []
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = [k for k in _children(proc.pid)
                   if b"spawn_main" in open(f"/proc/{k}/cmdline", "rb").read()]
    assert len(workers) == 2, "the campaign did not start its two workers"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def running(k: int) -> bool:         # a zombie has ended; it only waits for init to reap it
        try:
            return open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    deadline = time.time() + 30
    while time.time() < deadline and any(map(running, workers)):
        time.sleep(0.5)
    alive = [k for k in workers if running(k)]
    for k in alive:                      # do not leave them fuzzing beside the rest of the run
        os.kill(k, signal.SIGKILL)
    assert alive == [], f"workers {alive} outlived the killed campaign"
