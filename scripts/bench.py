"""Throughput of scripted (`sim`) runs beside AgentDojo's own ground-truth run, measured in
alternation in one process tree; run by scripts/bench.sh, which builds the binary and
finds the Python with agentdojo. Not a test: the machine is shared and noisy.

Each sieve-bench run is a whole process, start included (loading the selected suites,
tokenizer tables). Suites are proved once per fingerprint and build and the proof cached
(`suite::proof_cache`): one untimed run first proves and caches them, in a cache folder
of this benchmark's own, so the timed runs measure what every later run costs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

MATRICES = [
    ("four-suite matrix (dojo-style, important)", "dojo-style"),
    (
        "three-suite AgentDojo-sized matrix (dojo-style banking, slack, travel; important)",
        "dojo-style/banking,dojo-style/slack,dojo-style/travel",
    ),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="the sieve-bench binary")
    parser.add_argument("--out", required=True, type=Path, help="a scratch folder")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cores", default=str(os.cpu_count()))
    parser.add_argument("--agentdojo-python", help="a Python with agentdojo installed")
    return parser.parse_args()


def sim_run(binary: str, suites: str, out: Path, env: dict[str, str]) -> tuple[int, float]:
    """Episodes and seconds of one whole `run` process."""
    t0 = time.perf_counter()
    subprocess.run(
        [binary, "run", "--suite", suites, "--attack", "important", "--out", str(out), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    seconds = time.perf_counter() - t0
    with open(out / "episodes.jsonl") as f:
        episodes = sum(1 for line in f if line.strip())
    shutil.rmtree(out)
    return episodes, seconds


def dojo_run(python: str) -> tuple[int, float, float]:
    """Episodes, in-process seconds and wall seconds of AgentDojo's ground-truth run."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [python, "scripts/bench_agentdojo.py", "v1.2.2", "banking,slack,travel"],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    got = json.loads(r.stdout.strip().splitlines()[-1])
    return got["episodes"], got["seconds"], wall


def fmt(xs: list[float]) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):,.0f} ± {sd:,.0f}"


def main() -> None:
    args = parse_args()
    env = {**os.environ, "SIEVE_BENCH_PROOF_CACHE": str(args.out / "proofs")}
    for i, (_, suites) in enumerate(MATRICES):
        sim_run(args.bin, suites, args.out / f"warm-up{i}", env)
    rates: dict[str, list[float]] = {label: [] for label, _ in MATRICES}
    episodes: dict[str, int] = {}
    dojo_in: list[float] = []
    dojo_wall: list[float] = []
    dojo_n = 0
    for i in range(args.runs):
        for j, (label, suites) in enumerate(MATRICES):
            n, seconds = sim_run(args.bin, suites, args.out / f"run{i}-{j}", env)
            episodes[label] = n
            rates[label].append(n / seconds)
        if args.agentdojo_python:
            dojo_n, seconds, wall = dojo_run(args.agentdojo_python)
            dojo_in.append(dojo_n / seconds)
            dojo_wall.append(dojo_n / wall)

    print(
        f"{args.runs} run(s) each, {args.cores} cores (shared: figures are noisy), sieve-bench's "
        "process start included (suites proved and cached by one untimed run first)"
    )
    for label, _ in MATRICES:
        print(f"sieve-bench, {label}: {episodes[label]} episodes, {fmt(rates[label])} episodes/s")
    if not args.agentdojo_python:
        print(
            "AgentDojo not measured (no Python with agentdojo: set SIEVE_AGENTDOJO_PYTHON or run "
            "scripts/setup_agentdojo.sh), so no ratio is printed."
        )
        return
    ref = statistics.mean(dojo_in)
    sd = statistics.stdev(dojo_in) if len(dojo_in) > 1 else 0.0
    print(
        f"AgentDojo's own ground-truth run (banking, slack, travel; in-process, import excluded): "
        f"{dojo_n} episodes, {ref:.1f} ± {sd:.1f} episodes/s "
        f"({statistics.mean(dojo_wall):.1f} episodes/s with its interpreter's start)"
    )
    for label, _ in MATRICES:
        print(f"ratio, {label.split(' (')[0]} vs AgentDojo in-process: {statistics.mean(rates[label]) / ref:,.0f}x")


if __name__ == "__main__":
    main()
