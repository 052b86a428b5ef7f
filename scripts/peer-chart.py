#!/usr/bin/env python3
"""Draws the eds/PocketBase ratios of a `make bench BENCH=peer` table as an SVG
bar chart: `scripts/peer-chart.py < bench-output.txt > docs/guide/src/images/peer-ratios.svg`.

Reads the markdown rows the benchmark prints and takes the "eds/PB req/s"
column of every row that has one; a ratio of 1 (as fast as PocketBase) is
drawn as a line, and bars past the chart's right edge are cut and labelled.
"""
import html
import re
import sys

LIMIT = 3.0  # ratios drawn to scale up to this
WIDTH, LABEL, BAR, GAP = 760, 330, 22, 10


def rows(lines):
    for line in lines:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 12 or not cells[-2].endswith("×"):
            continue
        name = re.sub(r"`", "", cells[0])
        name = re.sub(r"\s*\(.*", "", name)[:48]
        yield name, float(cells[-2].rstrip("×"))


def main():
    data = list(rows(sys.stdin))
    scale = (WIDTH - LABEL - 70) / LIMIT
    height = 40 + len(data) * (BAR + GAP) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        'font-family="sans-serif" font-size="13">',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="10" y="22" font-size="15" font-weight="bold">'
        "eds requests/s as a multiple of PocketBase's (same run)</text>",
    ]
    for index, (name, ratio) in enumerate(data):
        y = 40 + index * (BAR + GAP)
        length = min(ratio, LIMIT) * scale
        colour = "#2e7d32" if ratio >= 1 else "#c62828"
        out.append(f'<text x="{LABEL - 8}" y="{y + 16}" text-anchor="end">{html.escape(name)}</text>')
        out.append(f'<rect x="{LABEL}" y="{y}" width="{length:.1f}" height="{BAR}" fill="{colour}"/>')
        text = f"{ratio:.2f}×" + (" (cut)" if ratio > LIMIT else "")
        out.append(f'<text x="{LABEL + length + 6:.1f}" y="{y + 16}">{text}</text>')
    one = LABEL + scale
    bottom = 40 + len(data) * (BAR + GAP)
    out.append(f'<line x1="{one}" y1="34" x2="{one}" y2="{bottom}" stroke="black" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{one}" y="{bottom + 16}" text-anchor="middle">1× PocketBase</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
