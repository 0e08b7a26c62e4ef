#!/usr/bin/env python3
"""GPU time of ggml's own kernels in a `vkdiff bench --ggml` run made with GGML_VK_PERF_LOGGER=1.

The bench's ggml column is the wall time of ggml_backend_graph_compute (recording, submit and
wait included), ours is GPU timestamps. ggml's perf logger prints each compute's GPU time
("Total time: X us.") to stderr; the bench prints "<variant> <label>: row took" after each row,
so the blocks between two such lines are that row's ggml computes (warmup and timed, all
rounds). Their median sets ggml's GPU time beside ours; their minimum is a check on the clocks
(while the bench's heater paused for all of ggml's host work, until 2026-12-06, the median of
the large rows came out up to 4x the minimum).
Usage: GGML_VK_PERF_LOGGER=1 vkdiff bench --ggml DIR [...] > BENCH.log 2> BENCH.err
       python3 ci/ggml-gpu-times.py BENCH.log BENCH.err"""
import re
import statistics
import sys

log, err = sys.argv[1], sys.argv[2]
rows = {}
for line in open(log, encoding="utf-8"):
    t = line.split()
    if len(t) >= 14 and t[0] in ("flash_attn", "wkv7", "mul_mm", "mul_mm_id", "mul_mat_vec", "mul_mat_vec_id"):
        # kernel variant shape... median spread GB/s %bw GFLOP/s %peak against spread ratio rank status
        rows[(t[1], " ".join(t[2:-11]))] = (t[-11], t[-5], t[-1])
totals = []
print("| kernel variant | shape | ours µs | ggml wall µs | ggml GPU µs median (n) / min | ratio by median / min |")
print("|---|---|---|---|---|---|")
for line in open(err, encoding="utf-8", errors="replace"):
    m = re.match(r"Total time: ([0-9.]+) us", line)
    if m:
        totals.append(float(m.group(1)))
        continue
    m = re.match(r"(\S+) (.*): row took", line)
    if m:
        variant, label = m.group(1), m.group(2)
        ours, wall, status = rows.get((variant, label), ("?", "?", "?"))
        if totals:
            gpu, fastest = statistics.median(totals), min(totals)
            try:
                o = float(ours.replace(",", ""))
                ratio = f"{gpu / o:.2f} / {fastest / o:.2f}"
            except ValueError:
                ratio = "?"
            print(f"| {variant} | {label} | {ours} | {wall} | {gpu:.1f} ({len(totals)}) / {fastest:.1f} | {ratio} |")
        else:
            print(f"| {variant} | {label} | {ours} | {wall} | none ({status}) | |")
        totals = []
