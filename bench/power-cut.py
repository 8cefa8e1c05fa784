#!/usr/bin/env python3
"""Power cuts (issue 16): what recd keeps, and what the sync cadence costs the disk.

  cuts      scripts/power-cut-test.sh CUTS: cuts of the test VM's power (ext4 on /dev/vda) at random
            moments of record, a video take, a take paused and resumed, import, stop, save, edit,
            played, play, delete, discard, delete-all and trim;
            cuts survived per operation, and the seconds lost per recording cut mid-take (the
            time from the start reply to the cut, less the duration recovery salvaged).
  cadence   bench/vm-sync-cost.sh in the VM: SECONDS of recording (48 kHz mono AAC from snd-aloop)
            with --sync-interval-ms 1000 (the default) beside the same with 0 (off): what reached the
            disk (/sys/block/vda/stat: bytes written, write requests, cache flushes) and the
            fdatasync/fsync calls recd made (strace), per minute of recording.
Writes its section of BENCHMARKS.md (not with --no-write or BENCH_NO_WRITE=1). Env: RECD_BIN_DIR
(recd, recd-media and recctl; default .build/release: what users run, as the suite's power cuts, which run the package), CUTS (30), SECONDS (60), POWER_CUT_OUT (the
folder of an earlier scripts/power-cut-test.sh run kept with RECD_POWER_CUT_OUT: its result is used
instead of new cuts), SYNC_COST_JSON (an earlier sync-cost.json: no VM run for the cadence),
LOG_WRITES=1 (also replay every flush point of one run: scripts/power-cut-replay.sh, ~20 min) or
LOG_WRITES_OUT (the kept folder of such a run). Without
scripts/vm/run-in-vm.sh it says why and exits 0.
"""
import datetime, json, os, statistics, subprocess, sys, tempfile
from benchmarks_md import write_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO)
BIN_DIR = os.path.abspath(os.environ.get("RECD_BIN_DIR", ".build/release"))
CUTS = int(os.environ.get("CUTS", "30"))
SECS = int(os.environ.get("SECONDS", "60"))
NO_WRITE = "--no-write" in sys.argv[1:] or os.environ.get("BENCH_NO_WRITE") == "1"
RUN_IN_VM = os.path.join(REPO, "scripts", "vm", "run-in-vm.sh")   # the repository's own harness
TITLE = "## Power cuts (ext4 in the VM)"


def log(*a):
    print("[power-cut]", *a, file=sys.stderr, flush=True)


def cuts():
    out = os.environ.get("POWER_CUT_OUT")
    if not out:
        out = tempfile.mkdtemp(prefix="recd-power-cut-bench.")
        env = dict(os.environ, RECD_POWER_CUT_OUT=out, RECD_BIN_DIR=BIN_DIR)
        log(f"{CUTS} cuts into {out}")
        subprocess.run(["scripts/power-cut-test.sh", str(CUTS)], env=env)
    summary = json.load(open(os.path.join(out, "summary.json")))
    cut_rounds = sum(1 for line in open(os.path.join(out, "rounds.txt")) if line.split()[1] != "check")
    return summary, cut_rounds


def log_writes():
    """The dm-log-writes replay's summary (every flush point of one run), or None when not asked for."""
    out = os.environ.get("LOG_WRITES_OUT")
    if not out and os.environ.get("LOG_WRITES") == "1":
        out = tempfile.mkdtemp(prefix="recd-log-writes-bench.")
        log(f"every flush point of one run into {out}")
        subprocess.run(["scripts/power-cut-replay.sh"], env=dict(os.environ, RECD_POWER_CUT_OUT=out, RECD_BIN_DIR=BIN_DIR))
    if not out:
        return None
    return json.load(open(os.path.join(out, "summary.json")))


def cadence():
    if os.environ.get("SYNC_COST_JSON"):
        return json.load(open(os.environ["SYNC_COST_JSON"]))
    work = tempfile.mkdtemp(prefix="recd-sync-cost.")
    img = os.path.join(work, "disk.img")
    subprocess.run(["truncate", "-s", "256M", img], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    tone = os.path.join(work, "tone.wav")
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", str(2 * SECS + 60), "sine", "1000",
                    "vol", "0.5"], check=True)
    env = dict(os.environ, VM_DISK=img, VM_RW=work, VM_MODULES="virtio_blk;ext4;snd-aloop", VM_TIMEOUT=str(4 * SECS + 300))
    log(f"recording {SECS} s with the cadence on and off, in the VM")
    r = subprocess.run([RUN_IN_VM, os.path.join(REPO, "bench/vm-sync-cost.sh"), os.path.join(BIN_DIR, "recd"), work, tone,
                        str(SECS), "1000", "0"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        log(r.stdout[-3000:], r.stderr[-3000:])
        sys.exit(1)
    return json.load(open(os.path.join(work, "sync-cost.json")))


def main():
    if not os.access(RUN_IN_VM, os.X_OK) and not (os.environ.get("POWER_CUT_OUT") and os.environ.get("SYNC_COST_JSON")):
        print(f"[power-cut] skipped: no {RUN_IN_VM}; BENCHMARKS.md left as it is")
        return 0
    summary, n = cuts()
    costs = cadence()
    lost = summary["secondsLost"]
    ops = summary["perOperation"]
    lines = [TITLE, "",
             f"Written by `bench/power-cut.py` on {datetime.date.today()} — 2 CPUs; recd: "
             f"`{os.path.relpath(BIN_DIR, REPO)}/recd` in the test VM (qemu TCG, Debian 12's kernel 6.1, ext4 on a virtio-blk "
             "disk image, `cache=writeback`); capture from snd-aloop.", "",
             f"**Cuts survived per operation** (`scripts/power-cut-test.sh {n}`: each cut a random moment of the "
             "operation, after a random set-up; judged by `Tests/vm/power-cut-check.py` against the replies "
             "acknowledged before the cut):", "",
             "| Operation | cuts | survived |", "|---|---:|---:|"]
    for op, (ok, bad) in sorted(ops.items()):
        lines.append(f"| {op} | {ok + bad} | {ok} |")
    total_ok = sum(v[0] for v in ops.values())
    total = sum(v[0] + v[1] for v in ops.values())
    lines.append(f"| **all** | {total} | {total_ok} |")
    lines.append("")
    if lost:
        lines.append(f"**Seconds lost per recording cut mid-take** ({len(lost)} recordings, cut 1–3 s after the start "
                     f"reply): median {statistics.median(lost):.2f} s, max {max(lost):.2f} s, min {min(lost):.2f} s — what was captured "
                     "by a status reply just before the cut plus the time since, less what recovery salvaged (the status "
                     "request's own time makes it up to ~0.2 s low, hence a minimum below 0). Before this change a cut "
                     "6.2 s into a take left 0 s and 0.98 s (issue 16); reproduced here: 0 s of 6.3 s.")
        lines.append("")
    replay = log_writes()
    if replay:
        ctx = replay["perOperation"]
        ok = sum(v[0] for v in ctx.values())
        total = sum(v[0] + v[1] for v in ctx.values())
        lines.append(f"**Every flush point of one run** (`scripts/power-cut-replay.sh`: dm-log-writes logged every write, "
                     "flush and FUA of one run — three takes, a 4 s recording, stop and save, save, edit, played, trim, "
                     "delete, discard, delete-all — and the disk was rebuilt as a cut right after each flush or FUA "
                     f"would leave it, then recovered by recd): {ok} of {total} states pass every check; by what was in "
                     "flight: " + ", ".join(f"{op} {v[0]}/{v[0] + v[1]}" for op, v in sorted(ctx.items())) + ".")
        if replay["secondsLost"]:
            rl = replay["secondsLost"]
            lines.append(f"While recording ({len(rl)} flush points), at most {statistics.median(rl):.2f} s lost at the median "
                         f"and {max(rl):.2f} s at worst (an upper bound: measured to the log mark after the flush, marks every 0.25 s).")
        lines.append("")
    lines += ["**The sync cadence's cost while recording** (`bench/vm-sync-cost.sh`: "
              f"{SECS} s of 48 kHz mono AAC at 128 kbit/s; disk figures from /sys/block/vda/stat from the start reply to a "
              "`sync` at the end (so that in both cases the span ends with all of it on the disk), journal and metadata "
              "included; calls counted by strace), per minute of recording:", "",
              "| --sync-interval-ms | bytes written / min | write requests / min | cache flushes / min | fdatasync / min | fsync / min |",
              "|---|---:|---:|---:|---:|---:|"]
    for c in costs:
        k = 60.0 / c["seconds"]
        name = f"{c['intervalMs']} (default)" if c["intervalMs"] == 1000 else ("0 (off)" if c["intervalMs"] == 0 else str(c["intervalMs"]))
        lines.append(f"| {name} | {c['bytesWritten'] * k / 1024:,.0f} KiB | {c['diskWrites'] * k:.0f} | {c['diskFlushes'] * k:.0f} | "
                     f"{c['fdatasyncs'] * k:.0f} | {c['fsyncs'] * k:.0f} |")
    on = next((c for c in costs if c["intervalMs"] == 1000), None)
    off = next((c for c in costs if c["intervalMs"] == 0), None)
    if on and off:
        per_min = lambda c, k: c[k] * 60.0 / c["seconds"]
        extra = per_min(on, "bytesWritten") - per_min(off, "bytesWritten")
        lines.append("")
        lines.append(f"The cadence costs {extra / 1024:,.0f} KiB more per minute "
                     f"({100 * extra / max(1, per_min(off, 'bytesWritten')):.0f}% over writing the same recording back "
                     f"in the kernel's own time; not broken down here, but an fdatasync that grows the file forces an ext4 "
                     f"journal commit, and the file's last, partly filled block is written again at the next one), "
                     f"{per_min(on, 'diskWrites') - per_min(off, 'diskWrites'):.0f} more write requests and "
                     f"{per_min(on, 'diskFlushes') - per_min(off, 'diskFlushes'):.0f} more cache flushes per minute; "
                     "the capture and encoder threads never wait for it.")
    lines.append("")
    section = "\n".join(lines) + "\n"
    print(section)
    if not NO_WRITE:
        log("wrote", write_section(REPO, TITLE, section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
