#!/usr/bin/env bash
# A Slurm array job: each task runs one shard of the matrix; a dependent job merges.
#
#   sbatch --array=0-7 scripts/slurm_array.sh            # 8 shards
#   sbatch --dependency=afterok:<jobid> --wrap \
#     "sieve-bench merge --out results/full results/shards/shard-*"
#
# Reach for it when a real-model run is limited by one endpoint's rate limit: give each
# shard its own key or endpoint (here: OPENAI_API_KEY_<index>, if set) so they do not
# share a quota. With `sim` one machine is enough.
#SBATCH --job-name=sieve-bench
#SBATCH --cpus-per-task=2
#SBATCH --time=04:00:00
#SBATCH --output=results/shards/slurm-%A_%a.out
set -euo pipefail
index=${SLURM_ARRAY_TASK_ID:?run under sbatch --array}
count=${SLURM_ARRAY_TASK_COUNT:?run under sbatch --array}
key_var="OPENAI_API_KEY_${index}"
if [[ -n "${!key_var:-}" ]]; then export OPENAI_API_KEY="${!key_var}"; fi
mkdir -p results/shards
exec sieve-bench run --suite all --attack all --defense none,sieve \
  --model "${MODEL:-sim:obedient}" \
  --shard "${index}/${count}" --out "results/shards/shard-${index}" --quiet
