"""Summarises scripts/bench_agentdojo.sh's timings (one JSON line per run: side,
concurrency, episodes, seconds): episodes per second, mean ± sd, per side."""

from __future__ import annotations

import argparse
import json
import statistics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("times", help="the JSON-lines file of timings")
    args = parser.parse_args()
    with open(args.times) as f:
        rows = [json.loads(line) for line in f]
    sides = [
        (("bridge", c), f"sieve-bench bridge ({c} provider process{'es' if c > 1 else ''})")
        for c in sorted({r["concurrency"] for r in rows if r["side"] == "bridge"})
    ]
    sides.append((("agentdojo", None), "AgentDojo's own ground-truth run (one process)"))
    for (side, c), label in sides:
        mine = [r for r in rows if r["side"] == side and r.get("concurrency") == c]
        rates = [r["episodes"] / r["seconds"] for r in mine]
        sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
        print(
            f"{label}: {mine[0]['episodes']} episodes, {statistics.mean(rates):.1f} ± {sd:.1f} episodes/s over {len(rates)} runs"
        )


if __name__ == "__main__":
    main()
