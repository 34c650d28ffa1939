#!/usr/bin/env python3
"""Writes a synthetic run of N episode records for the streaming benchmarks.

    synth_records.py SEED_RUN OUT N [K/M]

Copies SEED_RUN's records round-robin under fresh keys (the first copy keeps the seed's
own keys, so `run` resuming the seed's command finds every planned episode done) and
SEED_RUN's run.json beside them. With K/M, writes only the records whose index is K mod
M and marks the manifest as shard K of M, so `merge` can join M such folders.
"""

import json
import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__ or "")
        return 2
    src, dst, n = argv[0], argv[1], int(argv[2])
    k, m = (0, 1)
    if len(argv) == 4:
        k, m = (int(x) for x in argv[3].split("/"))
    with open(os.path.join(src, "episodes.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "episodes.jsonl"), "w", encoding="utf-8") as f:
        for i in range(k, n, m):
            r = dict(lines[i % len(lines)])
            copy = i // len(lines)
            if copy:
                r["key"] = f"{r['key']}|copy{copy}"
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(src, "run.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if len(argv) == 4:
        manifest["shard"] = [k, m]
    with open(os.path.join(dst, "run.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
