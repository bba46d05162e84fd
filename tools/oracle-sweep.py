#!/usr/bin/env python3
"""Oracle sweep: `pengine simulate` against crm_simulate (Pacemaker 2.1.5) just outside the corpus.

An exploration tool, not a test: nothing runs it in CI and its tallies are not pinned. For each
corpus CIB it picks (deterministically, seeded by the case name) one node or resource from the
CIB's status and applies one crm_simulate injection at a time:

  up      -u NODE                      a configured node that is offline comes up
  down    -d NODE                      an online node leaves cleanly
  fail    -f NODE                      an online node fails (is fenced)
  mon1    -i RSC_monitor_MS@NODE=1     a recurring monitor of an active resource fails
  mon7    -i RSC_monitor_MS@NODE=7     ... or finds the resource stopped
  probe0  -i RSC_monitor_0@OTHER=0     a probe finds an active resource also running elsewhere

then runs `crm_simulate -x CIB -S FLAGS` and `pengine simulate -x CIB -S FLAGS`, normalises both
as pengine/tests/injection_oracle.rs does (whitespace, the clock in last-failure values, our action
numbers) and compares them; when they agree, compares the score lines of `-s FLAGS` (sorted).

Usage: tools/oracle-sweep.py [--pengine target/release/pengine] [--out DIR] [--jobs N]
                             [--limit N] [--only MUTATION,...] [CASE ...]
Writes DIR/results.tsv (case, mutation, flags, verdict) and DIR/diffs/CASE.MUTATION.diff, and
prints the tally. Verdicts: same, summary (transition/status text differs), scores (only the
scores differ), ours-error (pengine failed or panicked), theirs-error (crm_simulate failed).
"""

import argparse
import concurrent.futures
import difflib
import hashlib
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "testdata/pacemaker-2.1.5/xml"

MUTATIONS = ["up", "down", "fail", "mon1", "mon7", "probe0"]


def oracle_cases():
    """Corpus cases injection_oracle.rs already uses (skipped here)."""
    text = (ROOT / "pengine/tests/injection_oracle.rs").read_text()
    return set(re.findall(r'\("([A-Za-z0-9_.-]+)", vec!\[', text))


def normalise(text):
    out = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line.startswith("Pretending action "):
            rest = line[len("Pretending action "):]
            line = "Pretending action N " + (rest.split(" ", 1)[1] if " " in rest else "")
        if "=" in line:
            head, tail = line.split("=", 1)
            if "Injecting attribute last-failure-" in head:
                line = head + "=TIME " + (tail.split(" ", 1)[1] if " " in tail else "")
        if line:
            out.append(line)
    return out


def is_online(state):
    return (state.get("in_ccm") in ("true", "yes", "1") or (state.get("in_ccm") or "").isdigit()) and \
        state.get("crmd") in ("online", "true") and state.get("join", "member") == "member"


def pick(case, cib_path):
    """{mutation: [flags]} for the mutations this CIB's status allows."""
    rng = random.Random(hashlib.sha256(case.encode()).hexdigest())
    try:
        root = ET.parse(cib_path).getroot()
    except ET.ParseError:
        return {}
    configured = root.find("configuration/nodes")
    configured = [] if configured is None else list(configured)
    nodes = [n.get("uname") for n in configured
             if n.get("uname") and n.get("type", "member") in ("member", "normal")]
    states = {s.get("uname"): s for s in root.iter("node_state") if s.get("uname")}
    online = [n for n in nodes if n in states and is_online(states[n])]
    offline = [n for n in nodes if n not in online]
    # (resource, node, interval_ms) for resources active on an online node by their last
    # operation: a recurring monitor of theirs that succeeded, else the probe ("0").
    monitors = []
    for n in online:
        for lr in states[n].iter("lrm_resource"):
            ops = sorted(lr.iter("lrm_rsc_op"), key=lambda op: int(op.get("call-id", "0") or 0))
            if not ops:
                continue
            last = ops[-1]
            task, rc = last.get("operation"), last.get("rc-code")
            active = (task in ("start", "promote", "demote", "migrate_from", "monitor", "notify")
                      and rc in ("0", "8"))
            if not active:
                continue
            recurring = [op.get("interval") for op in ops if op.get("operation") == "monitor"
                         and op.get("interval", "0") not in ("0", "") and op.get("rc-code") in ("0", "8")]
            monitors.append((lr.get("id"), n, recurring[-1] if recurring else "0"))
    chosen = {}
    if offline:
        chosen["up"] = ["-u", rng.choice(offline)]
    busy = sorted({n for _, n, _ in monitors}) or online
    if busy:
        chosen["down"] = ["-d", rng.choice(busy)]
        chosen["fail"] = ["-f", rng.choice(busy)]
    if monitors:
        rsc, node, ms = rng.choice(monitors)
        chosen["mon1"] = ["-i", f"{rsc}_monitor_{ms}@{node}=1"]
        rsc, node, ms = rng.choice(monitors)
        chosen["mon7"] = ["-i", f"{rsc}_monitor_{ms}@{node}=7"]
        rsc, node, ms = rng.choice(monitors)
        others = [n for n in online if n != node]
        if others:
            chosen["probe0"] = ["-i", f"{rsc}_monitor_0@{rng.choice(others)}=0"]
    return chosen


def run(cmd, cib, flags):
    try:
        p = subprocess.run(cmd + ["-x", str(cib)] + flags, capture_output=True,
                           text=True, timeout=120, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        return None, ["timeout"]
    return p.returncode, normalise(p.stdout) + ["--- stderr"] + normalise(p.stderr)


def scores(lines):
    """Score lines, sorted (crm_simulate -s also prints a terse status; pengine -s does not)."""
    return sorted(l for l in lines if " score on " in l)


def compare(job):
    pengine, case, mutation, flags, out = job
    cib = CORPUS / f"{case}.xml"
    rc_t, theirs = run(["crm_simulate"], cib, ["-S"] + flags)
    rc_o, ours = run([pengine, "simulate"], cib, ["-S"] + flags)
    if rc_t != 0:
        verdict = "theirs-error"
    elif rc_o != 0 or any("panicked" in l for l in ours):
        verdict = "ours-error"
    elif theirs != ours:
        verdict = "summary"
    else:
        theirs = scores(run(["crm_simulate"], cib, ["-s"] + flags)[1])
        rc_o, ours = run([pengine, "simulate"], cib, ["-s"] + flags)
        if rc_o != 0 or any("panicked" in l for l in ours):
            verdict = "ours-error"
        else:
            ours = scores(ours)
            verdict = "same" if theirs == ours else "scores"
    if verdict not in ("same", "theirs-error"):
        diff = difflib.unified_diff(theirs, ours, "crm_simulate", "pengine", lineterm="")
        (out / "diffs" / f"{case}.{mutation}.diff").write_text(
            " ".join(flags) + "\n" + "\n".join(diff) + "\n")
    return case, mutation, flags, verdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pengine", default=str(ROOT / "target/release/pengine"))
    ap.add_argument("--out", default="/tmp/oracle-sweep")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    out = Path(args.out)
    (out / "diffs").mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) - {""} or set(MUTATIONS)
    skip = oracle_cases()
    cases = args.cases or sorted(p.stem for p in CORPUS.glob("*.xml") if p.stem not in skip)
    if args.limit:
        cases = cases[: args.limit]
    jobs = []
    for case in cases:
        for mutation, flags in pick(case, CORPUS / f"{case}.xml").items():
            if mutation in only:
                jobs.append((args.pengine, case, mutation, flags, out))
    tally = Counter()
    by_mutation = Counter()
    with open(out / "results.tsv", "w") as res, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for case, mutation, flags, verdict in pool.map(compare, jobs):
            res.write(f"{case}\t{mutation}\t{' '.join(flags)}\t{verdict}\n")
            res.flush()
            tally[verdict] += 1
            by_mutation[(mutation, verdict)] += 1
    print(f"cases {len(cases)}, case x mutation runs {len(jobs)}")
    for verdict, n in tally.most_common():
        print(f"  {verdict}: {n}")
    for m in MUTATIONS:
        row = {v: by_mutation[(m, v)] for v in tally}
        print(f"  {m}: " + ", ".join(f"{v} {n}" for v, n in row.items() if n))


if __name__ == "__main__":
    sys.exit(main())
