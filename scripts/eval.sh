#!/usr/bin/env bash
# The evaluation of issue 8 (STEER Table 1 on our engine), offline and reproducible:
#   1. build CASES persona × query × aspect cases from the evaluation material
#      ($RUDDER_EVAL_DIR: profile.jsonl, personality.jsonl, researchy-dev/) with the model (seeded;
#      STEER Appendix E/J), each with a synthetic ChatGPT history;
#   2. run query-only, initial-persona, full-persona and rudder at C0 ∈ {0.1, 0.4, 0.7, 1.0}
#      on every case, with the same model as system, simulated user and judge, in one process
#      whose cases run side by side through the batched model (PARTS > 1 splits the cases
#      across processes instead, for machines with more memory than cores);
#   3. merge the parts into OUT/table.md, OUT/c0.svg and OUT/records.json (run.json in each
#      part holds the configuration).
# Every model call is kept in the parts' llm-cache.jsonl, so running the script again after an
# interruption continues where it stopped, and identical calls across systems run once.
# Needs the models and the Wikipedia corpus (`rudder models fetch`, `rudder corpus fetch
# wikipedia-vital-en`; fetched here if missing).
#   scripts/eval.sh [OUT]
#   env: CASES=10 PARTS=1 THREADS=(every physical core) MODEL=qwen2.5-coder-1.5b-instruct DEPTH=1 BREADTH=2
#        CLARIFY=0 SEED=0 SYSTEMS=query-only,initial-persona,full-persona,rudder
#        C0=0.1,0.4,0.7,1.0 RUDDER=target/release/rudder (built with rudder-eval if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-eval-out}"
cases="${CASES:-10}"
parts="${PARTS:-1}"
# Empty: the settings' default, every physical core.
threads="${THREADS:-}"
thread_flags=()
[[ -n "$threads" ]] && thread_flags=(--threads "$threads")
model="${MODEL:-qwen2.5-coder-1.5b-instruct}"
seed="${SEED:-0}"
rudder="${RUDDER:-target/release/rudder}"
eval_dir="${RUDDER_EVAL_DIR:?set RUDDER_EVAL_DIR to the evaluation material: profile.jsonl, personality.jsonl and researchy-dev/}"
# The date the prompts see, so a rerun on another day asks the same questions.
export RUDDER_DATE="${RUDDER_DATE:-2026-11-22}"

# `rudder eval` runs the rudder-eval binary beside it.
if [[ ! -x "$rudder" || ! -x "$(dirname "$rudder")/rudder-eval" ]]; then
  cargo build --release -p rudder-cli -p rudder-eval
fi
"$rudder" models fetch
"$rudder" corpus fetch wikipedia-vital-en

mkdir -p "$out"
# Finished cases are replayed from "$out/cases/llm-cache.jsonl", so this resumes a build.
"$rudder" --model "$model" "${thread_flags[@]}" eval build-cases --eval-dir "$eval_dir" \
  --queries "$cases" --personas-per-query 1 --seed "$seed" --out "$out/cases"

# Round-robin split; the parts sit beside cases.jsonl, so history paths still resolve.
pids=()
runs=()
for ((k = 0; k < parts; k++)); do
  awk -v k="$k" -v n="$parts" 'NF && (NR - 1) % n == k' "$out/cases/cases.jsonl" \
    >"$out/cases/part-$k.jsonl"
  [[ -s "$out/cases/part-$k.jsonl" ]] || continue
  runs+=("$out/run-$k")
  "$rudder" --model "$model" "${thread_flags[@]}" eval run "$out/cases/part-$k.jsonl" \
    --systems "${SYSTEMS:-query-only,initial-persona,full-persona,rudder}" \
    --c0 "${C0:-0.1,0.4,0.7,1.0}" \
    --judge "$model" --depth "${DEPTH:-1}" --breadth "${BREADTH:-2}" \
    --clarify "${CLARIFY:-0}" --out "$out/run-$k" >"$out/run-$k.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
"$rudder" eval table "${runs[@]}" --out "$out"
echo "table: $out/table.md, plots: $out/c0.svg, every number: $out/records.json"
exit "$status"
