"""``hpipe batch ... --scheduler tcp://HOST:8786`` runs here: the items of a batch on a Dask cluster.

The item logic lives in one place, the ``hpipe`` command: this module asks it for the items
(``hpipe batch ... --list --json``) and submits one task per pending item that runs the same
command as a one-item shard (``--shard K/N``) in a subprocess. The shard writes its output
atomically and skips it when complete, so a task that Dask reruns after losing its worker redoes
the item once, and a killed task's subprocess dies with it (removing its temporary file). A
failed item is retried once by the shard itself; its error comes back in the summary.

    python3 -m hpipe.batch --scheduler tcp://HOST:8786 --hpipe /usr/bin/hpipe [--json] -- \
        recon gap-tv --mask=mask.png --output=out -- measurements/
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import hpipe

_PR_SET_PDEATHSIG = 1


def _die_with_worker():
    """In the item's process: receive SIGTERM when the worker that started it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _command(hpipe_exe, args, *extra):
    # args = [cassi|recon, MODE, options..., "--", inputs...]: options go before the "--".
    return [hpipe_exe, "batch", *args[:2], *extra, *args[2:]]


def list_items(hpipe_exe, args):
    """The batch's items as ``hpipe batch --list --json`` gives them: the summary's result."""
    try:
        proc = subprocess.run(_command(hpipe_exe, args, "--list", "--json", "--shard=0/1"), capture_output=True,
                              text=True, errors="surrogateescape")
    except OSError as e:  # no such command
        raise BatchError(2, f"--hpipe {hpipe_exe}: cannot run it: {e.strerror}") from None
    if proc.returncode != 0:
        raise BatchError(proc.returncode, proc.stderr.strip())
    return json.loads(proc.stdout)["result"]


class BatchError(Exception):
    """The hpipe command refused the batch (exit status 2: bad usage) or could not list it."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def run_item(hpipe_exe, args, index, count, cwd):
    """Runs item `index` of `count` as a one-item shard in folder `cwd` (the submitter's: paths
    are the same on every worker, a shared filesystem) with this worker's hpipe thread count.
    Returns {"index", "status", "result" (the shard's summary, or None), "stderr"}."""
    cmd = _command(hpipe_exe, args, f"--shard={index}/{count}", "--workers=1", f"--threads={hpipe.num_threads()}",
                   "--json", "--quiet")
    # Errors may name files whose names are not UTF-8: decoded as Python decodes file names.
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="surrogateescape",
                          preexec_fn=_die_with_worker)
    result = json.loads(proc.stdout)["result"] if proc.stdout.startswith("{") else None
    return {"index": index, "status": proc.returncode, "result": result, "stderr": proc.stderr.strip()}


def submit(client, hpipe_exe, args):
    """Lists the items and submits one task per item not yet complete (all with --force).
    Returns (listing, futures)."""
    listing = list_items(hpipe_exe, args)
    force = "--force" in args[: args.index("--")] if "--" in args else "--force" in args
    run = uuid.uuid4().hex
    cwd = os.getcwd()
    futures = [
        client.submit(run_item, hpipe_exe, args, item["index"], listing["items"], cwd,
                      key=f"hpipe-batch-{run}-{item['index']}")
        for item in listing["list"] if force or not item["complete"]
    ]
    return listing, futures


def collect(listing, futures, progress=None):
    """Waits for the items; returns the summary (done / skipped / failed, items/s) like the
    command's. A usage error (the same for every item) cancels the rest and raises BatchError."""
    from distributed import as_completed

    start = time.monotonic()
    done, failures, clipped, clipped_items = 0, [], 0, []
    skipped = len(listing["list"]) - len(futures)
    by_index = {item["index"]: item for item in listing["list"]}
    for finished, future in enumerate(as_completed(futures), 1):
        try:
            r = future.result()
        except Exception as e:  # the task itself failed: its worker died too often (KilledWorker)
            index = int(future.key.rsplit("-", 1)[1])
            failures.append({"input": by_index[index]["input"], "output": by_index[index]["output"],
                             "error": f"{type(e).__name__}: {e}"})
            continue
        if r["status"] == 2:
            for f in futures:
                f.cancel()
            raise BatchError(2, r["stderr"].removeprefix("hpipe: error: "))
        if r["result"] is None:
            item = by_index[r["index"]]
            failures.append({"input": item["input"], "output": item["output"],
                             "error": r["stderr"].splitlines()[-1] if r["stderr"] else f"exit status {r['status']}"})
        else:
            done += r["result"]["done"]
            skipped += r["result"]["skipped"]
            failures += r["result"]["failures"]
            clipped += r["result"].get("clipped", 0)
            clipped_items += r["result"].get("clipped_items", [])
        if progress:
            progress(finished, len(futures))
    seconds = time.monotonic() - start
    return {"command": listing["command"], "items": listing["items"], "selected": listing["selected"], "done": done,
            "skipped": skipped, "failed": len(failures), "failures": failures, "clipped": clipped,
            "clipped_items": clipped_items, "seconds": seconds,
            "items_per_s": done / seconds if seconds > 0 else 0.0}


def _bar(finished, total):
    width = 30
    filled = width * finished // total
    sys.stderr.write(f"\rbatch [{'#' * filled}{' ' * (width - filled)}] {finished}/{total}")
    if finished == total:
        sys.stderr.write("\r\033[K")
    sys.stderr.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m hpipe.batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", required=True, help="the Dask scheduler, tcp://HOST:PORT")
    parser.add_argument("--hpipe", default="hpipe", help="the hpipe command (the same path on every worker)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then what follows `hpipe batch`")
    opts = parser.parse_args(argv)
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    from hpipe.dask import client

    try:
        c = client(opts.scheduler)
    except ValueError as e:  # not an address
        print(f"hpipe: error: --scheduler {opts.scheduler}: expected tcp://HOST:PORT ({e})", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"hpipe: error: --scheduler {opts.scheduler}: cannot connect to the Dask scheduler: {e}", file=sys.stderr)
        return 1
    try:
        listing, futures = submit(c, opts.hpipe, args)
        show = _bar if not opts.quiet and not opts.json and sys.stderr.isatty() else None
        summary = collect(listing, futures, show)
    except BatchError as e:
        print(f"hpipe: error: {e}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:  # items already running finish on their workers; a re-run skips them
        print("hpipe: error: interrupted; items already running on the workers still finish", file=sys.stderr)
        return 130
    for f in summary["failures"]:
        print(f"hpipe: error: {f['error'] if f['error'].startswith(f['input']) else f['input'] + ': ' + f['error']}",
              file=sys.stderr)
    for item in summary["clipped_items"]:
        if not opts.quiet:  # as the items' own warnings say it in a local batch
            print(f"hpipe: warning: {item['output']}: {item['clipped']} values were outside the output type's range "
                  "and were clipped (try --scale auto)", file=sys.stderr)
    summary["scheduler"] = opts.scheduler
    if opts.json:
        print(json.dumps({"command": "batch", "result": summary}))
    elif not opts.quiet:
        clipped = (f"; {summary['clipped']} values clipped in {len(summary['clipped_items'])} items"
                   if summary["clipped"] else "")
        print(f"batch {summary['command']}, {summary['selected']} items on {opts.scheduler}: {summary['done']} done, "
              f"{summary['skipped']} skipped, {summary['failed']} failed in {summary['seconds']:.2f} s "
              f"({summary['items_per_s']:.3g} items/s){clipped}")
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
