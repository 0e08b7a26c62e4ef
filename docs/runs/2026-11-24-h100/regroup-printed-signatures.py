# Re-derives the coarse findings of a printed `vkdiff run` findings list (fine signatures),
# with the rules of src/findings.rs FindingKey and the known-findings matching.
import sys, collections, re
text = open(sys.argv[1]).read()
known = []
for l in open(sys.argv[2]):
    l = l.strip()
    if not l or l.startswith('#'): continue
    pat, expl, fix = l.split(' :: ')
    known.append([p.strip() for p in pat.split(' & ')])
fine = []  # (signature, cases, variants)
for m in re.finditer(r'^#\d+ [A-Z-]+: (.*)\n  (\d+) failing cases over (\d+) variant runs', text, re.M):
    sig = re.sub(r'head size (\d+)', lambda h: h.group(0) + ('' if h.group(1) == '64' else ' (not 64)'), m.group(1))
    fine.append((sig, int(m.group(2)), int(m.group(3))))
def key(sig):
    path, kind, loc, shape, reach = sig.split(' | ')
    fam = 'wrong or unstable values' if kind in ('wrong value', 'NaN', '±inf', 'nondeterministic') else kind
    cause = []
    if re.search(r'(^|, )split($|, )', shape) or 'split_k' in shape:
        cause.append('split, K/split not a multiple of 32' if 'K/split not a multiple of 32' in shape else 'split')
    if 'repeated experts in a token' in shape: cause.append('repeated experts in a token')
    return f"{path} | {fam} | {'; '.join(cause) or 'no trigger'} | {reach}"
groups = collections.OrderedDict()
for sig, cases, runs in fine:
    groups.setdefault(key(sig), []).append((sig, cases, runs))
def explains(k, members):
    for pats in known:
        if all(all(p in f"{k} || {s}" for p in pats) for s, _, _ in members): return pats
    return None
rows = []
for k, members in groups.items():
    kn = explains(k, members)
    rows.append((k.endswith('reachable'), kn is not None, k, members, kn))
rows.sort(key=lambda r: (r[1], not r[0]))
new = [r for r in rows if not r[1]]
print(f"{len(rows)} distinct findings: {len(new)} new ({sum(r[0] for r in new)} reachable, {sum(not r[0] for r in new)} forced-only), {len(rows)-len(new)} known ({sum(r[0] for r in rows if r[1])} reachable) — from {len(fine)} fine signatures")
for i, (reach, isk, k, members, kn) in enumerate(rows, 1):
    kinds = collections.Counter(s.split(' | ')[1] for s, _, _ in members)
    print(f"#{i} {'KNOWN' if isk else ('REACHABLE' if reach else 'FORCED-ONLY')}: {k}\n   {sum(c for _, c, _ in members)} failing cases, {len(members)} fine signatures, {sum(r for _, _, r in members)} variant runs; outcomes: {dict(kinds)}" + (f"\n   known: {' & '.join(kn)}" if kn else ''))
