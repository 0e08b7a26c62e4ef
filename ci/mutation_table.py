#!/usr/bin/env python3
"""Per-file and per-kernel table of `vkdiff mutate` runs (mutants.json files), for MUTATE_NOTES.md.

usage: mutation_table.py [--equivalent mutants-equivalent.txt] RUN.json... [--rerun RERUN.json...]

A run may be a seeded sample (`--budget`/`--time`: each file's mutants in a seeded random order,
taken from the files in turn), so every file is a stratum. A mutant judged again in a --rerun
(more cases, or after a strategy change) takes the rerun's verdict; one that survived the first
run and is killed in the rerun counts as "gap closed". Mutants listed in the equivalence file
that survive are out of the score. The score's 95% interval is a
stratified bootstrap over the judged mutants of each file (2000 resamples), scaled to each
file's total.
"""
import json, random, sys
from collections import defaultdict

def key(m):
    return (m["file"], m["line"], m["column"], m["original"], m["replacement"])

def status(m, kernel):
    v = m["verdicts"].get(kernel)
    return v["status"] if v else None

def equivalences(path):
    out = set()
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        place, rest = line.split(" ", 1)
        f, l, c = place.rsplit(":", 2)
        orig, rest = rest[1:].split("` → `", 1)
        repl = rest.split("`", 1)[0]
        out.add((f, int(l), int(c), orig, repl))
    return out

def main(argv):
    totals, runs, reruns, mode, equiv = {}, [], [], "run", set()
    it = iter(argv)
    for a in it:
        if a == "--rerun":
            mode = "rerun"
        elif a == "--equivalent":
            equiv = equivalences(next(it))
        else:
            (runs if mode == "run" else reruns).append(a)
    judged = {}
    for r in runs:
        rep = json.load(open(r))
        for f, n in rep["generated_per_file"].items():
            totals.setdefault(f, n)
        for m in rep["mutants"]:
            judged[key(m)] = dict(m, first=m["verdicts"])
    for r in reruns:
        rep = json.load(open(r))
        for m in rep["mutants"]:
            if key(m) in judged:
                old = judged[key(m)]
                judged[key(m)] = dict(m, first=old["first"])
    # rows[(kernel, file)] = list of classes
    rows = defaultdict(list)
    for m in judged.values():
        for kernel in m["verdicts"]:
            s, first = status(m, kernel), m["first"][kernel]["status"]
            if s == "survived":
                c = "equivalent" if key(m) in equiv else "survived"
            elif s == "killed":
                c = "closed" if first == "survived" else "killed"
            else:
                c = s
            rows[(kernel, m["file"])].append(c)
    kernels = sorted({k for k, _ in rows})
    hdr = "| kernel | file | judged/total | killed | gap closed | equivalent | survived (open) | stillborn | unchanged | score (judged) |"
    print(hdr)
    print("|" + "---|" * hdr.count("|")[:-1] if False else "|---|---|---|---|---|---|---|---|---|---|")
    rng = random.Random(1)
    for kernel in kernels:
        strata = []
        for (k, f), cs in sorted(rows.items()):
            if k != kernel:
                continue
            n = {c: cs.count(c) for c in ["killed", "closed", "equivalent", "survived", "stillborn", "unchanged"]}
            kill = n["killed"] + n["closed"]
            den = kill + n["survived"]
            sc = f"{100*kill/den:.1f}%" if den else "-"
            print(f"| {kernel} | {f} | {len(cs)}/{totals.get(f,'?')} | {n['killed']} | {n['closed']} | {n['equivalent']} | {n['survived']} | {n['stillborn']} | {n['unchanged']} | {sc} |")
            strata.append((totals.get(f, len(cs)), cs))
        # Stratified ratio estimate and bootstrap interval.
        def est(samples):
            num = den = 0.0
            for N, cs in samples:
                w = N / len(cs)
                k = sum(c in ("killed", "closed") for c in cs)
                s = sum(c == "survived" for c in cs)
                num += w * k
                den += w * (k + s)
            return num / den if den else float("nan")
        point = est(strata)
        census = all(N == len(cs) for N, cs in strata)
        boots = sorted(est([(N, [rng.choice(cs) for _ in cs]) for N, cs in strata]) for _ in range(2000))
        boots = [b for b in boots if b == b]
        lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
        allc = [c for _, cs in strata for c in cs]
        N = sum(N for N, _ in strata)
        print(f"| **{kernel}** | all ({len(strata)} files) | {len(allc)}/{N} | {allc.count('killed')} | {allc.count('closed')} | {allc.count('equivalent')} | {allc.count('survived')} | {allc.count('stillborn')} | {allc.count('unchanged')} | **{100*point:.1f}%** {'(every mutant judged)' if census else f'(95% CI {100*lo:.1f}–{100*hi:.1f}%)'} |")

main(sys.argv[1:])
