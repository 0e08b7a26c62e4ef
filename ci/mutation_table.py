#!/usr/bin/env python3
"""Per-file and per-kernel table of `vkdiff mutate` runs (mutants.json files), for docs/mutation-score.md.

usage: mutation_table.py [--equivalent mutants-equivalent.txt] RUN.json... [--rerun RERUN.json...]

A run may be a seeded sample (`--budget`/`--time`: each file's mutants in a seeded random order,
taken from the files in turn), so every file is a stratum. A mutant judged again, in a later run
or in a --rerun (more cases, or after a strategy change), takes the last verdict; one that
survived its first judgement and is killed in a later one counts as "gap closed". A --rerun only
re-judges mutants the runs judged (a run re-judging a line also judges its neighbours, which are
not part of the sample); a later run adds its mutants (a census of a file, say). Mutants listed in the equivalence file
that survive are out of the score; the strict score counts those tagged [lavapipe] (not
observable on this device) as survivors. The per-kernel score is a stratified estimate (each
file's judged mutants weighted by the file's total over its sample size) with a 95% Wilson
interval on the effective sample size of those weights; "census" when every mutant was judged.
"""
import json, math, sys
from collections import defaultdict

def key(m):
    return (m["file"], m["line"], m["column"], m["original"], m["replacement"])

def status(m, kernel):
    v = m["verdicts"].get(kernel)
    return v["status"] if v else None

def equivalences(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        place, rest = line.split(" ", 1)
        f, l, c = place.rsplit(":", 2)
        orig, rest = rest[1:].split("` → `", 1)
        repl = rest.split("`", 1)[0]
        reason = rest.split("`", 1)[1].lstrip(": ").strip()
        out[(f, int(l), int(c), orig, repl)] = "lavapipe" if reason.startswith("[lavapipe]") else "same"
    return out

def main(argv):
    totals, runs, reruns, mode, equiv = {}, [], [], "run", {}
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
            first = judged[key(m)]["first"] if key(m) in judged else m["verdicts"]
            judged[key(m)] = dict(m, first=first)
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
                c = {"same": "equivalent", "lavapipe": "lavapipe"}.get(equiv.get(key(m)), "survived")
            elif s == "killed":
                c = "closed" if first == "survived" else "killed"
            else:
                c = s
            rows[(kernel, m["file"])].append(c)
    kernels = sorted({k for k, _ in rows})
    print("| kernel | file | judged/total | killed | gap closed | equivalent [same/robust] | not observable on lavapipe [lavapipe] | survived (open) | stillborn | unchanged | score | strict score |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    classes = ["killed", "closed", "equivalent", "lavapipe", "survived", "stillborn", "unchanged"]
    for kernel in kernels:
        strata = []
        for (k, f), cs in sorted(rows.items()):
            if k != kernel:
                continue
            n = {c: cs.count(c) for c in classes}
            print(f"| {kernel} | {f} | {len(cs)}/{totals.get(f, '?')} | "
                  + " | ".join(str(n[c]) for c in classes)
                  + f" | {pct(score(cs, False))} | {pct(score(cs, True))} |")
            strata.append((totals.get(f, len(cs)), cs))
        allc = [c for _, cs in strata for c in cs]
        N = sum(N for N, _ in strata)
        census = all(N_f == len(cs) for N_f, cs in strata)
        cells = []
        for strict in (False, True):
            p, n_eff = stratified(strata, strict)
            if p is None:
                cells.append("-")
            elif census:
                cells.append(f"**{pct(p)}** (census)")
            else:
                lo, hi = wilson(p, n_eff)
                cells.append(f"**{pct(p)}** ({pct(lo)}–{pct(hi)})")
        print(f"| **{kernel}** | all ({len(strata)} files) | {len(allc)}/{N} | "
              + " | ".join(str(allc.count(c)) for c in classes) + f" | {cells[0]} | {cells[1]} |")

def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"

def score(cs, strict):
    bad = ("survived", "lavapipe") if strict else ("survived",)
    k = sum(c in ("killed", "closed") for c in cs)
    s = sum(c in bad for c in cs)
    return k / (k + s) if k + s else None

def stratified(strata, strict):
    """Stratified estimate of killed / (killed + survived) over all mutants of the files, and
    the effective sample size of its weights (Kish), for the interval."""
    bad = ("survived", "lavapipe") if strict else ("survived",)
    num = den = 0.0
    weights = []
    for N, cs in strata:
        w = N / len(cs)
        for c in cs:
            if c in ("killed", "closed") or c in bad:
                weights.append(w)
                den += w
                num += w * (c in ("killed", "closed"))
    if not den:
        return None, 0
    n_eff = den * den / sum(w * w for w in weights)
    return num / den, n_eff

def wilson(p, n, z=1.96):
    """Wilson score interval: 95% for a proportion p seen in n draws (a sample, so the
    interval is conservative: no finite-population correction)."""
    c = p + z * z / (2 * n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (c - h) / (1 + z * z / n), (c + h) / (1 + z * z / n)

main(sys.argv[1:])
