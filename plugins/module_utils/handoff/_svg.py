"""Small standalone SVG pictures for the hand-off (no plotting dependency): a line chart with event marks and a
stage grid. Output is deterministic text (fixed number formatting, no timestamps, no random ids), so the same
records give the same bytes and the package keeps one sha256.
"""
# Copyright: repro.vllm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to repro.vllm (underscore name): not an API, it may change in any release.

from __future__ import annotations

from xml.sax.saxutils import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22")
FONT = 'font-family="Helvetica, Arial, sans-serif"'


def _num(value):
    """Fixed formatting: one decimal, no '-0.0'."""
    text = "%.1f" % value
    return "0.0" if text == "-0.0" else text


def _nice_step(span, ticks=5):
    if span <= 0:
        return 1.0
    raw = span / float(ticks)
    mag = 10 ** len(str(int(raw))) / 10.0 if raw >= 1 else 1.0
    while mag > raw:
        mag /= 10.0
    for mult in (1, 2, 2.5, 5, 10):
        if mult * mag >= raw:
            return mult * mag
    return 10 * mag


def _ticks(lo, hi, ticks=5):
    step = _nice_step(hi - lo, ticks)
    start = int(lo / step) * step
    out = []
    value = start
    while value <= hi + step * 1e-9 and len(out) < 50:
        if value >= lo - step * 1e-9:
            out.append(round(value, 6))
        value += step
    return out


def _label(value):
    if abs(value - round(value)) < 1e-6:
        return str(int(round(value)))
    return ("%.2f" % value).rstrip("0").rstrip(".")


def line_chart(title, series, marks=None, x_label="seconds since start", y_label="MiB", width=860, height=360):
    """An SVG line chart.

    ``series``: list of dict(name, points=[(x, y), ...]); ``marks``: list of dict(x, label) drawn as dashed
    vertical lines (start, ready, request, stop).  Returns the SVG text.
    """
    marks = [m for m in (marks or []) if m.get("x") is not None]
    left, right, top, bottom = 70, 180, 40, 50
    pw, ph = width - left - right, height - top - bottom
    xs = [p[0] for s in series for p in s["points"]] + [m["x"] for m in marks]
    ys = [p[1] for s in series for p in s["points"]]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_lo, y_hi = 0.0, (max(ys) if ys else 1.0)
    if x_hi <= x_lo:
        x_hi = x_lo + 1.0
    if y_hi <= y_lo:
        y_hi = y_lo + 1.0
    y_hi *= 1.08

    def sx(x):
        return left + (x - x_lo) / (x_hi - x_lo) * pw

    def sy(y):
        return top + ph - (y - y_lo) / (y_hi - y_lo) * ph

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img">'
           % (width, height, width, height),
           "<title>%s</title>" % escape(title),
           '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (width, height),
           '<text x="%d" y="24" %s font-size="15" font-weight="bold">%s</text>' % (left, FONT, escape(title))]
    for tick in _ticks(y_lo, y_hi):
        y = sy(tick)
        out.append('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e0e0e0"/>' % (left, _num(y), left + pw, _num(y)))
        out.append('<text x="%d" y="%s" %s font-size="11" text-anchor="end">%s</text>'
                   % (left - 6, _num(y + 4), FONT, _label(tick)))
    for tick in _ticks(x_lo, x_hi, 8):
        x = sx(tick)
        out.append('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#f0f0f0"/>' % (_num(x), top, _num(x), top + ph))
        out.append('<text x="%s" y="%d" %s font-size="11" text-anchor="middle">%s</text>'
                   % (_num(x), top + ph + 16, FONT, _label(tick)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#555555"/>' % (left, top, pw, ph))
    out.append('<text x="%d" y="%d" %s font-size="12" text-anchor="middle">%s</text>'
               % (left + pw // 2, height - 10, FONT, escape(x_label)))
    out.append('<text x="16" y="%d" %s font-size="12" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>'
               % (top + ph // 2, FONT, top + ph // 2, escape(y_label)))
    for i, mark in enumerate(marks):
        x = sx(mark["x"])
        out.append('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#444444" stroke-dasharray="4 3"/>'
                   % (_num(x), top, _num(x), top + ph))
        out.append('<text x="%s" y="%d" %s font-size="10" fill="#444444">%s</text>'
                   % (_num(x + 3), top + 12 + 11 * (i % 4), FONT, escape(str(mark["label"]))))
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = " ".join("%s,%s" % (_num(sx(x)), _num(sy(y))) for x, y in s["points"])
        if len(s["points"]) == 1:
            x, y = s["points"][0]
            out.append('<circle cx="%s" cy="%s" r="3" fill="%s"/>' % (_num(sx(x)), _num(sy(y)), color))
        elif pts:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (color, pts))
        ly = top + 14 + 16 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>'
                   % (left + pw + 12, ly - 4, left + pw + 30, ly - 4, color))
        out.append('<text x="%d" y="%d" %s font-size="11">%s</text>' % (left + pw + 34, ly, FONT, escape(s["name"])))
    if not series or not any(s["points"] for s in series):
        out.append('<text x="%d" y="%d" %s font-size="13" fill="#888888">no samples recorded</text>'
                   % (left + 20, top + ph // 2, FONT))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def stage_grid(title, stages, rows, width=None):
    """An SVG grid: one row per (run, node), one column per stage; reached stages filled, the failing stage red.

    ``rows``: list of dict(label, reached=[stage, ...], failed=stage or None, first=bool, note=str).
    The row that failed first across the case carries a star.
    """
    cell_w, cell_h, label_w, top = 96, 26, 230, 60
    width = width or label_w + cell_w * len(stages) + 240
    height = top + cell_h * max(len(rows), 1) + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img">'
           % (width, height, width, height),
           "<title>%s</title>" % escape(title),
           '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (width, height),
           '<text x="10" y="24" %s font-size="15" font-weight="bold">%s</text>' % (FONT, escape(title))]
    for j, stage in enumerate(stages):
        out.append('<text x="%d" y="%d" %s font-size="11" text-anchor="middle">%s</text>'
                   % (label_w + cell_w * j + cell_w // 2, top - 8, FONT, escape(stage)))
    for i, row in enumerate(rows):
        y = top + cell_h * i
        out.append('<text x="10" y="%d" %s font-size="12">%s%s</text>'
                   % (y + 17, FONT, "\u2605 " if row.get("first") else "", escape(row["label"])))
        reached = set(row.get("reached") or [])
        for j, stage in enumerate(stages):
            if stage == row.get("failed"):
                fill = "#d62728"
            elif stage in reached:
                fill = "#2ca02c"
            else:
                fill = "#eeeeee"
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ffffff"/>'
                       % (label_w + cell_w * j, y + 2, cell_w - 2, cell_h - 4, fill))
        if row.get("note"):
            out.append('<text x="%d" y="%d" %s font-size="11" fill="#333333">%s</text>'
                       % (label_w + cell_w * len(stages) + 8, y + 17, FONT, escape(row["note"])))
    legend_y = top + cell_h * max(len(rows), 1) + 24
    for k, (fill, text) in enumerate((("#2ca02c", "reached"), ("#d62728", "failed here"), ("#eeeeee", "not reached"))):
        x = 10 + 130 * k
        out.append('<rect x="%d" y="%d" width="14" height="14" fill="%s"/>' % (x, legend_y - 11, fill))
        out.append('<text x="%d" y="%d" %s font-size="11">%s</text>' % (x + 20, legend_y, FONT, text))
    out.append('<text x="%d" y="%d" %s font-size="11">\u2605 failed first across the case</text>'
               % (10 + 130 * 3, legend_y, FONT))
    out.append("</svg>")
    return "\n".join(out) + "\n"
