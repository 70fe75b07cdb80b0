"""The tests (and suites) a `swift test` log shows started and never finished: what a run killed by its time limit
was still running. Names are matched by count, so a name two suites share is listed while either is unfinished."""
import collections
import re
import sys

started, finished = collections.Counter(), collections.Counter()
# Two tests' lines can interleave (one written in the middle of another): markers are found anywhere in a line.
start = re.compile(r"◇ (Test|Suite) (?!case passing)(.*?) started\.")
end = re.compile(r"[✔✘━] (Test|Suite) (?!case passing)(.*?)(?: with \d+ test cases?)? (?:passed|failed) after ")
with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
    for line in log:
        for m in start.finditer(line):
            started[(m[1], m[2])] += 1
        for m in end.finditer(line):
            finished[(m[1], m[2])] += 1
unfinished = sorted((kind, name, n) for (kind, name), n in (started - finished).items() if name != "run")
for kind in ("Test", "Suite"):
    for k, name, n in unfinished:
        if k == kind:
            print(f"{kind} {name}" + (f" (x{n})" if n > 1 else ""))
