"""Session 43's H100 table: session 42's whole table with the rows that session 43 timed again
against upstream replaced by those timings. Usage: python3 merge_table.py > h100-table-rows.md"""
import re, sys
from pathlib import Path

here = Path(__file__).parent
old = (here.parent / "2026-12-06-s42" / "h100-table.md").read_text().splitlines()
# Logs whose rows replace session 42's (ours = the tree of the commit named in h100-table.md).
logs = ["call1/logs/q5k_up.log", "call2/logs/ba_up.log", "call4/logs/mmid_up.log"]
row = re.compile(r"^(\S+)\s+(\S+)\s+(.+?)\s+([\d.]+)\s+(\d+%)\s+[\d.]+\s+(\d+%)\s+[\d.]+\s+\d+%"
                 r"\s+([\d.]+)\s+(\d+%)\s+([\d.]+)\s+(\w+)\s+ok$")
fmt = lambda v: f"{float(v):,.1f}"
new = {}
for log in logs:
    for line in (here / log).read_text().splitlines():
        m = row.match(line)
        if m:
            k, v, shape, ours, sp, bw, theirs, tsp, ratio, rank = m.groups()
            r = f"**{ratio}**" if float(ratio) < 1.0 else ratio
            new[(v, shape)] = (f"| {k} | `{v}` | {shape} | {fmt(ours)} ({sp}) | {bw} | "
                               f"{fmt(theirs)} ({tsp}) | {r} | {rank} |")
out, replaced = [], 0
for line in old:
    cells = [c.strip() for c in line.split("|")]
    key = (cells[2].strip("`"), cells[3]) if len(cells) > 4 else None
    if key in new:
        out.append(new.pop(key))
        replaced += 1
    elif line.startswith("|") and len(cells) > 4:
        out.append(line)
ratios = [float(c.split("|")[7].split()[0].strip("*")) for c in out[2:]]
print("\n".join(out))
print(f"{len(ratios)} rows ({replaced} from session 43): "
      f"{sum(r >= 1.0 for r in ratios)} at or above 1.0, {sum(r < 1.0 for r in ratios)} below.",
      file=sys.stderr)
assert not new, f"rows not in session 42's table: {list(new)}"
