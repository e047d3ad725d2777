#!/usr/bin/env bash
# The GPU benchmarks of docs/gpu.md in one go, sized for one call on a lent GPU machine
# (about 9 minutes on an H100; the first lease, 2026-11-26, measured what each takes). Each
# runs under its own time limit, so one that hangs leaves the others their time; each log
# goes to LOG_DIR (default: ./gpu-logs). Packages the machine lacks: docs/gpu.md.
#   bash benchmarks/run_gpu.sh [LOG_DIR]
set -u
cd "$(dirname "$0")/.."
logs=${1:-gpu-logs}
mkdir -p "$logs"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$logs/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$logs/gpu.txt"
run() {  # run NAME SECONDS ARGS...
    local name=$1 limit=$2
    shift 2
    echo "=== $name (limit ${limit}s): $*"
    timeout --signal=INT --kill-after=10 "$limit" python3 "$@" 2>&1 | tee "$logs/$name.log"
    echo "=== $name: exit ${PIPESTATUS[0]}"
}
run llm_0.5b 100 benchmarks/bench_llm_gpu.py --shape 0.5b --requests 512 --baseline-batches 128,256
run backtranslation 180 benchmarks/bench_backtranslation.py --sentences 32 --single 8 --gpu-sentences 1024 --gpu-batches 128,256
run vaegpt 80 benchmarks/bench_vaegpt_train.py --repeats 1 --steps 20
run llm_7b 170 benchmarks/bench_llm_gpu.py --shape 7b --requests 256 --baseline-batches 128,256
