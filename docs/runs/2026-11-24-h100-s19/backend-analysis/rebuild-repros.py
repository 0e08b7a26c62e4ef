#!/usr/bin/env python3
"""Rebuilds a reproducer per shrunk group from a backend-mode report.jsonl(.gz) whose repro/
folder was not kept: python3 rebuild-repros.py REPORT TREE OUTDIR (TREE: the ggml tree to
record, e.g. "$(bash ci/upstream-tree.sh 0.1.109)"). Replay with `vkdiff replay FILE`."""
import gzip, hashlib, json, os, sys

report, tree, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
opener = gzip.open if report.endswith(".gz") else open
for line in opener(report, "rt"):
    r = json.loads(line)
    if r.get("type") != "variant":
        continue
    config = r["config"].split()[-1]
    for f in r.get("findings") or []:
        sig = f["signature"]
        tag = hashlib.md5(json.dumps(f["case"]).encode()).hexdigest()[:6]
        name = f"{config}-{r['variant']}-{sig['kind'].replace(' ', '_')}-{tag}.json"
        rep = {
            "vkdiff_reproducer": 1,
            "kernel": r["kernel"],
            "variant": r["variant"],
            "device": r.get("device", ""),
            "shaders": "",
            "ggml": {"tree": tree, "config": config},
            "finding": " | ".join([sig["path"], sig["kind"], sig["location"], sig["shape"]]),
            "shrunk_from": "",
            "case": f["case"],
        }
        with open(os.path.join(out, name), "w") as fh:
            json.dump(rep, fh, indent=1)
        print(name)
