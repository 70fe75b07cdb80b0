#!/usr/bin/env python3
"""The day's curves from bench/day.sh's output, as one SVG (no plotting library needed): requests answered, p99, the
daemon's and the acquirer's RSS per window, one panel each, one polyline per run given. Usage:
    bench/day-plot.py OUT.svg NAME=day.log [NAME=day.log ...]"""
import re
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def read(path):
    """Per window of the day and the morning (in order): requests answered per second (any status but 0, "no answer":
    above the machine's maximum the offered rate is not what it serves), p99 ms; per machine line: the daemon's and
    the acquirer service's RSS MiB."""
    answered, p99, rss, acquirer = [], [], [], []
    window = 60
    for line in open(path):
        m = re.search(r"windows of (\d+)s", line)
        if m:
            window = int(m.group(1))
        m = re.match(r"load (day|morning) window \d+: ops \d+ ops/s \d+ p50 [\d.]+ ms p99 ([\d.]+) ms .*?status ([\dx,]+)", line)
        if m:
            counts = [part.split("x") for part in m.group(3).split(",") if "x" in part]
            answered.append(sum(int(n) for code, n in counts if code != "0") / window)
            p99.append(float(m.group(2)))
        m = re.match(r"machine window \d+ .*rss daemon (\d+) MiB acquirer (\d+) MiB", line)
        if m:
            rss.append(float(m.group(1)))
            acquirer.append(float(m.group(2)))
    return {"answered (requests/s)": answered, "p99 (ms)": p99, "daemon RSS (MiB)": rss, "acquirer RSS (MiB)": acquirer}


def main():
    out, runs = sys.argv[1], [arg.split("=", 1) for arg in sys.argv[2:]]
    series = [(name, read(path)) for name, path in runs]
    panels = list(series[0][1].keys())
    # The plots are 620 wide; the legend takes the 200 to their right.
    width, height, margin, legend = 720, 200, 50, 200
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + legend}" height="{len(panels) * (height + margin) + margin}" '
           'font-family="sans-serif" font-size="12">']
    for p, panel in enumerate(panels):
        top = margin + p * (height + margin)
        values = [v for _, data in series for v in data[panel]] or [1]
        longest = max(len(data[panel]) for _, data in series) or 1
        ymax = max(values) * 1.1 or 1
        svg.append(f'<text x="{margin}" y="{top - 8}">{panel} per window</text>')
        svg.append(f'<rect x="{margin}" y="{top}" width="{width - 2 * margin}" height="{height}" fill="none" stroke="#888"/>')
        svg.append(f'<text x="{margin - 4}" y="{top + 4}" text-anchor="end">{ymax:.0f}</text>')
        svg.append(f'<text x="{margin - 4}" y="{top + height}" text-anchor="end">0</text>')
        for s, (name, data) in enumerate(series):
            ys = data[panel]
            points = " ".join(
                f"{margin + (width - 2 * margin) * i / max(1, longest - 1):.1f},{top + height - height * y / ymax:.1f}"
                for i, y in enumerate(ys))
            colour = COLOURS[s % len(COLOURS)]
            svg.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
            svg.append(f'<text x="{width - margin + 4}" y="{top + 14 + 14 * s}" fill="{colour}">{name}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


main()
