#!/usr/bin/python3
"""trace_png.py — a strata profile (--profile, docs/profiling.md) as a PNG
timeline, and a summary of what it shows on stdout.

    tools/trace_png.py TRACE.json OUT.png [--run N|median|all] [--title TEXT]

One row per thread of the trace (the session thread, CPU workers, CUDA
streams, OpenCL queues, host commands, transfers), a bar per slice, the
ops that take the most time in their own colours.  The run's critical
path is drawn over it: from the command that ended last, back through the
predecessor each command waited for (the one whose edge released it
last), so the red line shows the chain of edges the run's length is made
of, and its dashes the time a command waited after its edge was done.

The summary gives the run's wall time, the time per op, each thread's
busy share, how much of the run had 0, 1, 2, ... commands running at
once (and threads busy, counting a CPU worker's loop chunks for another
worker's command, drawn faded), and the longest waits between an edge's
release and the command's start.  --run picks the run (default: the last, which a bench or a
repeated check has warmed up; "median": the run of median wall time;
"all" draws every run).

Needs numpy and matplotlib (Debian's python3-matplotlib, which
scripts/setup.sh installs); run it with /usr/bin/python3.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

PALETTE = ["#2563eb", "#f97316", "#16a34a", "#dc2626", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#4b5563"]
OTHER, SESSION = "#cbd5e1", "#94a3b8"


def load(path):
    with open(path, encoding="utf-8") as f:
        t = json.load(f)
    ev = t["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    return t, ev, names


def pick_runs(t, which):
    runs = t["otherData"]["runs"]
    if not runs:
        sys.exit("trace_png: the trace has no runs")
    if which == "all":
        return runs
    if which == "median":   # a typical run rather than the luckiest
        return [sorted(runs, key=lambda r: r["end_us"] - r["begin_us"])[len(runs) // 2]]
    k = len(runs) - 1 if which is None else int(which)
    if not 0 <= k < len(runs):
        sys.exit("trace_png: no run %d (the trace has %d)" % (k, len(runs)))
    return [runs[k]]


def concurrency(cmds, lo, hi):
    """Seconds of [lo, hi] with k commands running, per k."""
    pts = sorted([(e["ts"], 1) for e in cmds] + [(e["ts"] + e["dur"], -1) for e in cmds])
    out, k, at = {}, 0, lo
    for ts, d in pts:
        ts = min(max(ts, lo), hi)
        out[k] = out.get(k, 0.0) + ts - at
        at, k = ts, k + d
    out[k] = out.get(k, 0.0) + hi - at
    return out


def critical_path(cmds):
    """Slices from the last-ending command back through waited_for."""
    by = {(e["args"]["run"], e["args"]["stage"], e["args"]["command"]): e for e in cmds}
    path, e = [], max(cmds, key=lambda e: e["ts"] + e["dur"])
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        path.append(e)
        a = e["args"]
        w = a.get("waited_for_command")
        e = by.get((a["run"], a["stage"], w)) if w is not None else None
    return path[::-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--run", default=None, help="run number, median or all (default: the last)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    t, ev, names = load(a.trace)
    runs = pick_runs(t, a.run)
    lo, hi = min(r["begin_us"] for r in runs), max(r["end_us"] for r in runs)
    chosen = {r["run"] for r in runs}
    slices = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "run" and e.get("args", {}).get("run") in chosen]
    cmds = [e for e in slices if "command" in e["args"]]
    if not cmds:
        sys.exit("trace_png: run(s) %s have no commands" % sorted(chosen))

    # time per op, and a colour for the ones that matter
    per_op = {}
    for e in cmds:
        per_op[e["args"]["op"]] = per_op.get(e["args"]["op"], 0.0) + e["dur"]
    top = [op for op, _ in sorted(per_op.items(), key=lambda kv: -kv[1])][:len(PALETTE) - 1]
    colour = {op: PALETTE[i] for i, op in enumerate(top)}

    threads = sorted({(e["pid"], e["tid"]) for e in slices})
    row = {k: i for i, k in enumerate(threads)}
    scale = 1e3 if hi - lo > 5e3 else 1.0          # ms for long runs, us otherwise
    unit = "ms" if scale == 1e3 else "us"
    x = lambda us: (us - lo) / scale  # noqa: E731
    span = (hi - lo) / scale
    fig = plt.figure(figsize=(16, 2.6 + 0.55 * len(threads)), dpi=110)
    gs = fig.add_gridspec(2, 1, height_ratios=[max(len(threads), 2), 1.2], hspace=0.08)
    ax = fig.add_subplot(gs[0])
    cx = fig.add_subplot(gs[1], sharex=ax)

    for r in runs:
        ax.axvspan(x(r["begin_us"]), x(r["end_us"]), color="#f8fafc", zorder=0)
    for e in slices:
        y = row[(e["pid"], e["tid"])]
        helping = e.get("cat") == "help"
        c = colour.get(e["args"].get("op"), OTHER) if "command" in e["args"] or helping else SESSION
        ax.broken_barh([(x(e["ts"]), e["dur"] / scale)], (y - 0.36, 0.72), facecolors=c, edgecolors="white",
                       linewidth=0.4, alpha=0.4 if helping else 1.0, zorder=2)
        if e["dur"] / scale > 0.035 * span and not helping:   # name the long ones
            ax.text(x(e["ts"] + e["dur"] / 2), y, e["name"].strip("/").replace("/conv/Conv", ""), ha="center",
                    va="center", fontsize=6, color="white", clip_on=True, zorder=4)
    # the critical path: each command on it, and the step to the next
    # (dashed where the next one waited after its edge was done)
    path = critical_path(cmds)
    for p, q in zip(path, path[1:]):
        y0, y1 = row[(p["pid"], p["tid"])], row[(q["pid"], q["tid"])]
        waited = q["ts"] - (p["ts"] + p["dur"]) > 0.005 * (hi - lo)
        ax.plot([x(p["ts"] + p["dur"]), x(q["ts"])], [y0 + 0.42, y1 + 0.42], color="#b91c1c", lw=1.0,
                ls=(0, (2, 1.5)) if waited else "-", zorder=3)
    for p in path:
        y = row[(p["pid"], p["tid"])] + 0.42
        ax.plot([x(p["ts"]), x(p["ts"] + p["dur"])], [y, y], color="#b91c1c", lw=1.8, zorder=3,
                solid_capstyle="butt")
    ax.set_yticks(range(len(threads)))
    ax.set_yticklabels([names.get(k, "%d/%d" % k) for k in threads], fontsize=8)
    ax.set_ylim(len(threads) - 0.4, -0.6)
    ax.set_xlim(0, span)
    ax.grid(axis="x", color="#e5e7eb", lw=0.5, zorder=1)
    ax.tick_params(axis="x", labelbottom=False)
    wall = sum(r["end_us"] - r["begin_us"] for r in runs)
    title = a.title or "%s on %s: run %s, %.2f ms wall, %d commands" % (
        t["otherData"].get("producer", "strata"), t["otherData"].get("device", "?"),
        ",".join(str(r["run"]) for r in runs) if len(runs) < 4 else "%d-%d" % (runs[0]["run"], runs[-1]["run"]),
        wall / 1e3, len(cmds))
    ax.set_title(title, fontsize=10)

    # commands running at once, over time
    pts = sorted([(e["ts"], 1) for e in cmds] + [(e["ts"] + e["dur"], -1) for e in cmds])
    xs, ys, k = [0.0], [0], 0
    for ts, d in pts:
        k += d
        xs.append(x(ts))
        ys.append(k)
    xs.append(span)
    ys.append(k)
    cx.step(xs, ys, where="post", color="#334155", lw=0.8, label="commands running")
    cx.fill_between(xs, ys, step="post", color="#cbd5e1")
    # threads busy: a command, or another command's loop chunks (help)
    work = [e for e in slices if "command" in e["args"] or e.get("cat") == "help"]
    pts = sorted([(e["ts"], 1) for e in work] + [(e["ts"] + e["dur"], -1) for e in work])
    bx, by, k = [0.0], [0], 0
    for ts, d in pts:
        k += d
        bx.append(x(ts))
        by.append(k)
    bx.append(span)
    by.append(k)
    cx.step(bx, by, where="post", color="#b45309", lw=0.8, label="threads busy (with loop help)")
    cx.set_ylabel("at once", fontsize=8)
    top_y = max(max(ys), max(by))
    cx.set_ylim(0, top_y + 0.5)
    cx.set_yticks(range(0, top_y + 1))
    cx.legend(loc="upper left", fontsize=7, frameon=False)
    cx.set_xlabel("%s from the start of run %d" % (unit, runs[0]["run"]), fontsize=9)
    cx.grid(axis="x", color="#e5e7eb", lw=0.5)

    handles = [Patch(color=colour[op], label="%s %.0f%%" % (op, 100 * per_op[op] / sum(per_op.values())))
               for op in top]
    handles += [Patch(color=OTHER, label="other ops"), Patch(color=SESSION, label="session thread"),
                Patch(color=PALETTE[0], alpha=0.4, label="loop chunks for another worker's command"),
                plt.Line2D([], [], color="#b91c1c", lw=1.8, label="critical path (dashed: waiting)")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.subplots_adjust(left=0.13, right=0.99, top=0.92, bottom=0.2 if len(threads) < 5 else 0.12)
    fig.savefig(a.png)

    # the summary
    total = sum(per_op.values())
    print("%s: run(s) %s, wall %.3f ms, %d commands, %.3f ms of command time" %
          (a.trace, ",".join(str(r["run"]) for r in runs), wall / 1e3, len(cmds), total / 1e3))
    print("time per op:")
    for op, us in sorted(per_op.items(), key=lambda kv: -kv[1])[:10]:
        n = sum(1 for e in cmds if e["args"]["op"] == op)
        print("  %-20s %9.3f ms  %5.1f%%  %4d commands" % (op, us / 1e3, 100 * us / total, n))
    print("threads (busy share of the wall time):")
    for k in threads:
        busy = sum(e["dur"] for e in slices if (e["pid"], e["tid"]) == k)
        print("  %-36s %5.1f%%  %4d slices" % (names.get(k, str(k)), 100 * busy / wall,
                                               sum(1 for e in slices if (e["pid"], e["tid"]) == k)))
    conc = {}
    for r in runs:
        for k, v in concurrency([e for e in cmds if e["args"]["run"] == r["run"]], r["begin_us"], r["end_us"]).items():
            conc[k] = conc.get(k, 0.0) + v
    print("commands running at once (share of the wall time): " +
          ", ".join("%d: %.1f%%" % (k, 100 * v / wall) for k, v in sorted(conc.items())))
    busy = {}
    for r in runs:
        mine = [e for e in work if e["args"]["run"] == r["run"]]
        for k, v in concurrency(mine, r["begin_us"], r["end_us"]).items():
            busy[k] = busy.get(k, 0.0) + v
    print("threads busy at once, loop help included (share of the wall time): " +
          ", ".join("%d: %.1f%%" % (k, 100 * v / wall) for k, v in sorted(busy.items())))
    waits = sorted(((e["args"]["start_after_edge_us"], e) for e in cmds if "start_after_edge_us" in e["args"]),
                   key=lambda we: we[0])
    print("start after the last edge: median %.1f us, total %.3f ms; longest:" %
          (float(np.median([w for w, _ in waits])) if waits else 0.0, sum(w for w, _ in waits) / 1e3))
    for w, e in waits[::-1][:5]:
        print("  %9.1f us  %s (%s) after %s [%s]" % (w, e["name"], e["args"]["op"], e["args"]["waited_for"],
                                                    e["args"]["edge"]))
    cp = sum(p["dur"] for p in path)
    print("critical path: %d commands, %.3f ms of command time (%.1f%% of the wall time)" %
          (len(path), cp / 1e3, 100 * cp / wall))
    print("wrote %s" % a.png)


if __name__ == "__main__":
    main()
