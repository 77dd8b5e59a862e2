#!/usr/bin/env python3
"""README's CPU performance table, from one `make bench` run's JSON.

    make bench
    scripts/bench_table.py build/bench.json --readme README.md

Each row is a workload of ../shared/workloads.md (or of an issue's goal), its benchmark, the
references it is measured against in the same run (BM_stream_copy for ops that read and write,
BM_stream_read for reductions that only read; beside the copy, for the ops whose streaming libraries
write their outputs with streaming stores, the limit of such stores: BM_stream_nt_copy, or
BM_stream_nt_write for ops that mostly write) and its goal. Times are medians when the run has
repetitions. The goals live here, and nowhere else; the figures live in README, written by this.
"""
import argparse
import json
import re
import sys

# (workload, benchmark, references: a tuple of REFERENCES' keys, goal)
ROWS = [
    ("W4 CASSI A", "BM_cassi_forward/16/28/256/256/2", ("read",), "≥ 85% of read"),
    ("W4 CASSI Aᵀ", "BM_cassi_adjoint/16/28/256/256/2", ("copy", "nt write"), "≥ 75% of copy"),
    ("W4 CASSI A⁺", "BM_cassi_pinv/16/28/256/256/2", ("copy", "nt write"), "≥ 75% of copy"),
    ("W4 column-count inverse", "BM_cassi_pinv_alpha/16/28/256/256/2", ("copy", "nt write"), "≥ 75% of copy"),
    ("W4 shift (zero-padded into the sheared frame)", "BM_cassi_shift/16/28/256/256/2", ("copy",), "—"),
    ("W4 shift back (the crop)", "BM_cassi_shift_back/16/28/256/256/2", ("copy", "nt copy"), "—"),
    ("CASSI A, one image (B = 1)", "BM_cassi_forward/1/28/256/256/2", (), "—"),
    ("CASSI Aᵀ, one image", "BM_cassi_adjoint/1/28/256/256/2", (), "—"),
    ("GAP-TV iteration, 28×256×256, 5 TV steps", "BM_gap_tv_step/28/256/256/2/5/0", (), "≤ 2.5 ms"),
    ("GAP-TV run of 10 iterations (host arrays, as the CLI and Python)", "BM_gap_tv_run/28/256/256/2/5/0", (),
     "≈ 10 × the iteration"),
    ("ADMM-TV iteration, same", "BM_admm_tv_step/28/256/256/2/5/0", (), "≤ 3 ms"),
    ("ADMM-TV iteration, vectorial TV", "BM_admm_tv_step/28/256/256/2/5/1", (), "≤ 1.5 × per band"),
    ("TV denoiser, 5 steps", "BM_tv_denoise/28/256/256/2/5/0", (), "≤ 2 ms"),
    ("TV denoiser, vectorial", "BM_tv_denoise/28/256/256/2/5/1", (), "≤ 1.5 × per band"),
    ("TV denoiser, the same pixels as 7 × 512 × 512", "BM_tv_denoise/7/512/512/2/5/0", (), "—"),
    ("W1 dot 500 × 500", "BM_dot/500/500", ("read",), "faster than (a*b).sum(1)"),
    ("W1 dot 4096 × 4096", "BM_dot/4096/4096", ("read",), "≥ 80%"),
    ("W1 dot, 4 long rows", "BM_dot/4/10000000", ("read",), "—"),
    ("dot of 10⁶ 3-vectors (short rows)", "BM_dot/1000000/3", ("read",), "—"),
    ("W1 dot, transposed views 4096 × 4096", "BM_dot_transposed/4096/4096", ("read",), "—"),
    ("W3 conv1d, 10⁵ rows of 9, 7 taps each", "BM_conv1d_rows/100000/9/7", ("copy",), "≥ 60%"),
    ("W3 case A (5 rows of 5, 7 taps)", "BM_conv1d_rows/5/5/7", (), "a few µs"),
    ("W3 case B (100 rows of 9, one kernel of 6)", "BM_conv1d_shared/100/9/6", (), "—"),
    ("W2 exp float32, 10⁸", "BM_exp_f32/10000/10000", ("copy", "nt copy"), "≥ 80%"),
    ("W2 log float32", "BM_log_f32/10000/10000", ("copy", "nt copy"), "≥ 80%"),
    ("W2 erf float32", "BM_erf_f32/10000/10000", ("copy", "nt copy"), "≥ 80%"),
    ("W2 exp float64", "BM_exp_f64/10000/10000", ("copy", "nt copy"), "≥ 70%"),
    ("W2 erf float64", "BM_erf_f64/10000/10000", ("copy", "nt copy"), "—"),
    ("erf float64 of a normal CDF's arguments", "BM_erf_f64_normal_cdf/10000/10000", ("copy", "nt copy"), "—"),
    ("W2 logsumexp float32, axis 0", "BM_logsumexp_f32/10000/10000/0", ("read",), "≥ 60% of read"),
    ("W2 logsumexp float32, axis 1", "BM_logsumexp_f32/10000/10000/1", ("read",), "—"),
    ("W2 logsumexp float64, axis 0", "BM_logsumexp_f64/10000/10000/0", ("read",), "—"),
    ("logsumexp float32, 10⁶ rows of 10 along the last axis", "BM_logsumexp_f32/1000000/10/1", ("read",), "—"),
    ("logsumexp float32, 125000 rows of 32 along the last axis", "BM_logsumexp_f32/125000/32/1", ("read",), "—"),
]
REFERENCES = {"copy": "BM_stream_copy/512", "read": "BM_stream_read/512", "nt copy": "BM_stream_nt_copy/512",
              "nt write": "BM_stream_nt_write/512"}
BEGIN, END = "<!-- bench-table: begin -->", "<!-- bench-table: end -->"


def results(report):
    """{benchmark name: (seconds per iteration, bytes per second)}, medians where there are."""
    out, medians = {}, set()
    for b in report["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b["run_name"].removesuffix("/real_time")
        median = b.get("aggregate_name") == "median"
        if b.get("run_type") == "aggregate" and not median:
            continue
        if name in medians and not median:
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        out[name] = (b["real_time"] * scale, b.get("bytes_per_second"))
        if median:
            medians.add(name)
    return out, bool(medians)


def format_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            break
    value = seconds / scale
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def table(report):
    found, medians = results(report)
    missing = [name for name in REFERENCES.values() if name not in found]
    if missing:
        sys.exit(f"bench_table: the run has no {', '.join(missing)}: run every benchmark (make bench)")
    context = report["context"]
    measured = ", ".join(f"`{name.split('/')[0]}` **{found[name][1] / 1e9:.1f} GB/s**" for name in REFERENCES.values())
    lines = [
        f"{context.get('cpu_model', 'unknown CPU')}, {context.get('num_cpus')} cores, "
        f"{context.get('hpipe_threads', '?')} threads, {context['date']} "
        f"(load average {context.get('load_avg', ['?'])[0]:.2g} at the start); "
        f"{'median of ' + str(report['benchmarks'][0].get('repetitions', 1)) + ' runs' if medians else 'one run'}. "
        f"References in the same run: {measured}.",
        "",
        "| workload | benchmark | time | % of reference | goal |",
        "|---|---|---|---|---|",
    ]
    for workload, name, references, goal in ROWS:
        if name not in found:
            sys.exit(f"bench_table: the run has no {name}")
        seconds, rate = found[name]
        ratios = [f"{100 * rate / found[REFERENCES[r]][1]:.0f}% of {r}" for r in references]
        ratio = ", ".join(ratios) or "—"
        lines.append(f"| {workload} | `{name}` | {format_time(seconds)} | {ratio} | {goal} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="Google Benchmark JSON of a full hpipe_bench run")
    parser.add_argument("--readme", help=f"replace the table between '{BEGIN}' and '{END}' in this file")
    args = parser.parse_args()
    with open(args.json) as f:
        text = table(json.load(f))
    if not args.readme:
        sys.stdout.write(text)
        return
    with open(args.readme) as f:
        readme = f.read()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        sys.exit(f"bench_table: {args.readme} has no '{BEGIN}' ... '{END}' block")
    with open(args.readme, "w") as f:
        f.write(pattern.sub(lambda _: f"{BEGIN}\n{text}{END}", readme))


if __name__ == "__main__":
    main()
