#!/usr/bin/env python3
"""Checks the rounds of scripts/power-cut-test.sh on the host.

Usage: power-cut-check.py OUTDIR
       power-cut-check.py --log-writes OUTDIR   (every flush point of one run: Tests/vm/log-writes.sh)

OUTDIR/rounds.txt lists the rounds ("ROUND OP DELAY_MS VM_STATUS SEED"); round R's folder holds what
its guest saw at start-up (after the previous cut and recd's recovery: after.json, check.json,
status.json, tree.txt, integrity.txt, files/) and the log of the replies acknowledged before its own
cut (acks.jsonl). Round R is judged against round R+1's start-up:
- every acknowledged change is there: a reply that said a recording was saved, edited, played (its
  count), trimmed, deleted, discarded or all deleted is what the catalog shows, and an acknowledged
  marker is there as it was made (markers.json) while its recording is; the one operation in
  flight at the cut is either done or not, whole (a delete-all all or nothing);
- nothing half-done remains: no orphan file, no row without its file, no hidden leftovers, no row
  left `recording` or marked `missing`, nothing quarantined, no recovery problem, and every
  recording's file decodes to the end and is as long as its row says;
- the catalog passes PRAGMA integrity_check;
- a recording cut mid-take (audio, video, or one paused and resumed) is salvaged, and loses at most
  LOSS_LIMIT seconds; an import cut in flight is there whole or not at all (no upload left behind).
Prints one line per round, a summary per operation, the seconds lost per interrupted recording,
and last the plain line "N passed, M failed".
"""
import json
import os
import statistics
import subprocess
import sys

LOSS_LIMIT = 1.5        # seconds a recording cut mid-take may lose (a fragment, ~1 s, and the sync)
DURATION_SLACK = 0.06   # row against file, and a trim's cut against what was asked


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        out.append({"unparsable": line})
    except OSError:
        pass
    return out


def probe_duration(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
                       capture_output=True, text=True)
    try:
        return float(r.stdout.strip())
    except ValueError:
        return None


def decodes(path):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()[-300:]


def startup_problems(d):
    """What is wrong with a start-up state on its own (whatever came before)."""
    problems = []
    integrity = open(os.path.join(d, "integrity.txt")).read().strip() if os.path.exists(os.path.join(d, "integrity.txt")) else "(none)"
    if integrity != "ok":
        problems.append(f"PRAGMA integrity_check: {integrity[:200]}")
    after = load(os.path.join(d, "after.json"))
    if not after or "recordings" not in after:
        return problems + ["no listing of the library"], {}
    rows = {r["id"]: r for r in after["recordings"]}
    check = load(os.path.join(d, "check.json"), {})
    for key in ("rowsWithoutFile", "missing", "filesWithoutRow", "interruptedRecordings", "unsettled"):
        if check.get(key):
            problems.append(f"check: {key} {check[key]}")
    recovery = (check.get("lastRecovery") or {})
    for key in ("quarantined", "markedMissing", "problems"):
        if recovery.get(key):
            problems.append(f"recovery: {key} {recovery[key]}")
    for r in rows.values():
        if r["state"] in ("recording", "missing"):
            problems.append(f"{r['id']} is {r['state']}")
    # The data directory: Recordings/ holds exactly the rows' files, nothing hidden; .uploads is empty.
    files, others = set(), []
    for line in open(os.path.join(d, "tree.txt")):
        kind, _, path = line.rstrip("\n").split(" ", 2)
        if path.startswith("./Recordings/"):
            name = path[len("./Recordings/"):]
            if kind == "f" and "/" not in name and not name.startswith("."):
                files.add("Recordings/" + name)
            else:
                others.append(path)
        elif path.startswith("./.uploads/"):
            others.append(path)
    if others:
        problems.append(f"leftovers: {others}")
    wanted = {r["file"] for r in rows.values()}
    if files - wanted:
        problems.append(f"files without a row: {sorted(files - wanted)}")
    if wanted - files:
        problems.append(f"rows without a file: {sorted(wanted - files)}")
    # Every file decodes to the end and is as long as its row says.
    for r in rows.values():
        copy = os.path.join(d, "files", os.path.basename(r["file"]))
        if not os.path.exists(copy):
            continue
        ok, err = decodes(copy)
        if not ok:
            problems.append(f"{r['file']} does not decode: {err}")
        length = probe_duration(copy)
        if length is None or r.get("duration") is None or abs(length - r["duration"]) > DURATION_SLACK:
            problems.append(f"{r['file']}: file {length} s, row {r.get('duration')} s")
    return problems, rows


def same(expected, actual):
    """What a reply said about a recording, against what the catalog shows after the cut."""
    diffs = []
    for key in ("state", "title", "notes", "purpose", "playCount", "type", "file"):
        if expected.get(key) != actual.get(key):
            diffs.append(f"{key} {expected.get(key)!r} → {actual.get(key)!r}")
    e, a = expected.get("duration"), actual.get("duration")
    if e is not None and (a is None or abs(e - a) > DURATION_SLACK):
        diffs.append(f"duration {e} → {a}")
    return diffs


def judge(rnd, op, before_rows, acks, after_rows, after_dir):
    """Problems of one cut: what the acknowledged replies say against what is there after it."""
    problems = []
    model = {k: dict(v) for k, v in before_rows.items()}
    begun, acked_inflight, cut_at, started, captured = None, None, None, None, None
    acked_markers = {}   # marker id -> (recording id, the marker as the reply gave it)
    for entry in acks:
        if "unparsable" in entry:
            problems.append(f"unparsable log line {entry['unparsable'][:100]}")
            continue
        if "cut" in entry:
            cut_at = entry["cut"]
            continue
        if "begin" in entry:
            if entry["begin"] != "record":
                begun = entry
            continue
        status, reply, path, method = entry["status"], entry.get("reply"), entry["path"], entry["method"]
        if begun and entry["call"] == begun["begin"]:
            acked_inflight = entry
        if not (200 <= status < 300):
            continue   # refused: nothing changed
        if path == "/v1/status":
            active = (reply or {}).get("active") or {}
            frames = (active.get("capture") or {}).get("framesCaptured")
            # A take with pauses (or a video take): the seconds recorded, pauses not counted, and
            # whether it was paused then (nothing more went in after).
            if op in ("pause", "video") and active.get("elapsed") is not None:
                captured = (active["elapsed"], entry["t1"], active.get("paused", False))
            elif frames is not None:
                captured = (frames / reply["sampleRate"], entry["t1"], False)
            continue
        if path in ("/v1/record/pause", "/v1/record/resume"):
            continue
        if method == "POST" and path.endswith("/markers"):
            acked_markers[reply["id"]] = (path.split("/")[3], reply)
            continue
        if path == "/v1/record/start":
            model[reply["recording"]["id"]] = reply["recording"]
            started = (reply["recording"]["id"], entry["t1"])
        elif path == "/v1/record/stop":
            rid = started[0] if started else None
            if reply.get("discarded"):
                model.pop(rid, None)
            else:
                model[reply["recording"]["id"]] = reply["recording"]
        elif method == "DELETE" and path.startswith("/v1/recordings?confirm=all"):
            model = {}
        elif method == "DELETE":
            model.pop(path.rsplit("/", 1)[1], None)
        elif path.endswith("/discard"):
            model.pop(path.split("/")[3], None)
        elif path == "/v1/playback/stop":
            ended = (reply or {}).get("lastEnded") or {}
            target = begun["target"] if begun else None
            if ended.get("counted") and ended.get("recordingID") in model:
                model[ended["recordingID"]]["playCount"] = before_rows.get(ended["recordingID"], {}).get("playCount", 0) + 1
                if target == ended["recordingID"]:
                    begun = dict(begun, settled=True)
        elif path.endswith("/play"):
            pass   # a play counts when it ends (stop, or played to the end)
        elif isinstance(reply, dict) and "id" in reply and "state" in reply:
            model[reply["id"]] = reply   # save, edit, played, trim: the recording as it is now
    if cut_at is None:
        problems.append("no cut logged (the guest ended before cutting)")

    # What the operation in flight may or may not have done, per recording.
    alternatives = {rid: [rec] for rid, rec in model.items()}
    lost = None
    if begun and acked_inflight is None:
        name, target = begun["begin"], begun.get("target")
        body = begun.get("body") or {}
        if name == "delete-all":
            alternatives = None   # all or nothing, judged below
        elif name in ("delete", "discard") and target in model:
            alternatives[target] = [model[target], None]
        elif name == "save" and target in model:
            alternatives[target] = [model[target], dict(model[target], state="ready", title=body.get("title"))]
        elif name == "edit" and target in model:
            alternatives[target] = [model[target], dict(model[target], notes=body.get("notes"))]
        elif name in ("played", "playback-stop") and target in model:
            alternatives[target] = [model[target], dict(model[target], playCount=model[target]["playCount"] + 1)]
        elif name == "trim" and target in model:
            alternatives[target] = [model[target], dict(model[target], duration=body.get("end"))]
        elif name == "stop" and started and started[0] in model:
            rid = started[0]
            salvaged = dict(model[rid], state="pending", duration=None)
            then = body.get("then")
            # (A stop's title applies whether the take is saved or kept.)
            done = None if then == "discard" else dict(model[rid], state="ready" if then == "save" else "pending",
                                                        title=body.get("title", model[rid]["title"]), duration=None)
            alternatives[rid] = [salvaged, done]
            if cut_at is not None and cut_at - started[1] < LOSS_LIMIT:
                # A take shorter than that, cut before its first fragment or its finalized file was
                # on the disk: recovery removes it (it lost less than the limit).
                alternatives[rid].append(None)
    if op == "play" and begun and not begun.get("settled"):
        target = begun.get("target")
        if target in model:   # the take may have played to its end (and counted) before the stop
            alternatives[target] = alternatives.get(target, [model[target]]) + [dict(model[target], playCount=model[target]["playCount"] + 1)]
    # A recording cut mid-take comes back pending, salvaged, all but the last moments.
    if op in ("record", "video", "pause") and started:
        rid, t_start = started
        alternatives[rid] = [dict(model[rid], state="pending", duration=None)]
        if rid not in after_rows and cut_at is not None and cut_at - t_start < LOSS_LIMIT:
            # Cut before the first fragment was on the disk: recovery removes the empty take.
            alternatives[rid].append(None)
            lost = cut_at - t_start
        if rid in after_rows and cut_at is not None:
            got = after_rows[rid].get("duration") or 0.0
            # Recorded at the cut: what the status reply just before it said was captured, and the
            # time from that reply to the cut (else the time since the start reply).
            recorded = captured[0] + (0 if captured[2] else cut_at - captured[1]) if captured else cut_at - t_start
            lost = recorded - got
            if not after_rows[rid].get("recovered"):
                problems.append(f"{rid} was not marked recovered")
            if lost > LOSS_LIMIT:
                problems.append(f"salvaged {got:.2f} s of {recorded:.2f} s: lost {lost:.2f} s")

    if begun and acked_inflight is None and begun["begin"] == "import":
        # An import in flight: its recording is there whole (saved, titled as asked) or not at all.
        for rid, row in after_rows.items():
            if rid not in alternatives and row["state"] == "ready" and row.get("title") == begun.get("target"):
                alternatives[rid] = [row]
    if begun and acked_inflight is None and begun["begin"] == "start":
        # A start in flight: its row may be there (salvaged, or still empty and removed).
        for rid, row in after_rows.items():
            if rid not in alternatives and row["state"] == "pending" and row.get("recovered"):
                alternatives[rid] = [row]
    if alternatives is None:   # delete-all in flight
        kept = [rid for rid in model if rid in after_rows]
        if kept and len(kept) != len(model):
            problems.append(f"delete-all left {len(kept)} of {len(model)}")
        alternatives = {rid: [model[rid]] if kept else [None] for rid in model}
    for rid, options in alternatives.items():
        actual = after_rows.get(rid)
        if actual is None:
            if None not in options:
                problems.append(f"{rid} ({options[0].get('state')}, acknowledged) is gone")
            continue
        candidates = [o for o in options if o is not None]
        if not candidates:
            problems.append(f"{rid} was acknowledged as removed but is there ({actual['state']})")
            continue
        results = [same(o, actual) for o in candidates]
        if not any(not r for r in results):
            problems.append(f"{rid}: {min(results, key=len)}")
    for rid in after_rows:
        if rid not in alternatives:
            problems.append(f"{rid} is there ({after_rows[rid]['state']}) but no reply created it")
    problems += judge_markers(rnd, acked_markers, begun if acked_inflight is None else None, after_rows, after_dir)
    return problems, lost


def judge_markers(rnd, acked, inflight, after_rows, after_dir):
    """Each acknowledged marker of a recording that is still there is there, at its time and with its
    label; one in flight at the cut is there whole or not at all; none belongs to a recording that is gone."""
    path = os.path.join(after_dir, "markers.json")
    if not os.path.exists(path):
        return [] if not acked else ["no markers.json after the cut"]
    text = open(path).read().strip()
    try:
        rows = json.loads(text) if text else []
    except ValueError:
        return [f"markers.json does not read: {text[:200]}"]
    after = {m["id"]: m for m in rows}
    problems = []
    for mid, (rid, made) in acked.items():
        if rid not in after_rows:
            continue   # the recording went (deleted, trimmed away), and its markers with it
        m = after.get(mid)
        if m is None:
            problems.append(f"acknowledged marker {mid} of {rid} is gone")
        elif m["recordingID"] != rid or abs(m["time"] - made["time"]) > 1e-6 or m["label"] != made.get("label"):
            problems.append(f"marker {mid} was made {made} and is {m}")
    for m in rows:
        if m["recordingID"] not in after_rows:
            problems.append(f"marker {m['id']} belongs to {m['recordingID']}, which is not there")
        elif m["id"] not in acked and not (inflight and inflight.get("begin") == "mark" and m["recordingID"] == inflight.get("target")
                                            and m["label"] == (inflight.get("body") or {}).get("label")):
            # (Markers of earlier rounds were acknowledged there; only this round's new ones are judged.)
            if (m["label"] or "").endswith(f" in round {rnd}"):
                problems.append(f"marker {m['id']} ({m['label']!r}) is there but no reply made it")
    return problems


def log_writes(out):
    """Every flush point of one logged run (Tests/vm/log-writes.sh): each state against the replies
    acknowledged before that point in the log."""
    entries = lines(os.path.join(out, "entries.jsonl"))
    acks = lines(os.path.join(out, "acks.jsonl"))
    # Ours are NAME:TIME; the kernel adds one of its own at the end ("dm-log-writes-end").
    marks = [(e["index"], e["mark"].split(":")[0], float(e["mark"].split(":")[1]))
             for e in entries if e["kind"] == "mark" and ":" in e["mark"]]
    def mark_index(name):
        return next((i for i, m, _ in marks if m == name), None)
    points = sorted(int(d.split("-", 1)[1]) for d in os.listdir(out) if d.startswith("round-"))
    passed = failed = 0
    losses, per_context = [], {}
    for p in points:
        acked = {a["n"] for a in acks if "call" in a and (mark_index(f"a{a['n']}") or 1 << 60) < p}
        begun = {a["n"] for a in acks if "begin" in a and (mark_index(f"b{a['n']}") or 1 << 60) < p}
        inflight = begun - acked
        cut_at = next((t for i, _, t in marks if i > p), None)
        synthetic = [a for a in acks if "call" in a and a["n"] in acked]
        synthetic += [a for a in acks if "begin" in a and a["n"] in inflight]
        synthetic.append({"cut": cut_at})
        # The context: a recording running (its start acknowledged, its stop not begun), else the
        # operation in flight, else none.
        starts = [a["n"] for a in acks if a.get("call") == "start" and a["n"] in acked]
        stops = [a["n"] for a in acks if a.get("begin") == "stop" and a["n"] in begun]
        op = next((a["begin"] for a in acks if "begin" in a and a["n"] in inflight), "none")
        if starts and (not stops or max(stops) < max(starts)) and not inflight:
            op = "record"
        d = os.path.join(out, f"round-{p}")
        problems = []
        if not os.path.exists(os.path.join(d, "after.json")):
            problems.append("recd did not start on this state (see points.log)")
            rows = {}
        else:
            problems, rows = startup_problems(d)
        judged, lost = judge(p, op, {}, synthetic, rows, d)
        problems += [x for x in judged if x != "no cut logged (the guest ended before cutting)"]
        if lost is not None:
            losses.append(lost)
        ok = not problems
        passed += ok
        failed += not ok
        stats = per_context.setdefault(op, [0, 0])
        stats[0 if ok else 1] += 1
        extra = f", lost at most {lost:.2f} s" if lost is not None else ""
        print(f"flush point {p} ({op}): {'ok' if ok else 'FAILED'}{extra}")
        for x in problems:
            print(f"    {x}")
    print("flush points survived per operation in flight: "
          + ", ".join(f"{op} {s[0]}/{s[0] + s[1]}" for op, s in sorted(per_context.items())))
    if losses:
        print(f"seconds lost (at most) per flush point while recording: median {statistics.median(losses):.2f}, "
              f"max {max(losses):.2f} ({len(losses)} points)")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"passed": passed, "failed": failed, "perOperation": per_context, "secondsLost": losses}, f, indent=1)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main():
    if sys.argv[1] == "--log-writes":
        return log_writes(sys.argv[2])
    out = sys.argv[1]
    rounds = []
    for line in open(os.path.join(out, "rounds.txt")):
        parts = line.split()
        if len(parts) >= 4:
            rounds.append((int(parts[0]), parts[1], int(parts[2]), int(parts[3])))
    cuts = [r for r in rounds if r[1] != "check"]
    passed = failed = 0
    per_op, losses = {}, []
    for rnd, op, delay, status in cuts:
        here, nxt = os.path.join(out, f"round-{rnd}"), os.path.join(out, f"round-{rnd + 1}")
        problems = []
        if status != 125:
            problems.append(f"the guest ended with status {status}, not by the power cut (125)")
        # (Round R's own start-up state was judged with round R-1.)
        _, before_rows = startup_problems(here) if os.path.exists(os.path.join(here, "after.json")) else ([], {})
        if not os.path.exists(os.path.join(nxt, "after.json")):
            problems.append("the next guest dumped nothing")
            after_rows = {}
        else:
            after_problems, after_rows = startup_problems(nxt)
            problems += after_problems
        judged, lost = judge(rnd, op, before_rows, lines(os.path.join(here, "acks.jsonl")), after_rows, nxt)
        problems += judged
        if lost is not None:
            losses.append(lost)
        ok = not problems
        passed += ok
        failed += not ok
        stats = per_op.setdefault(op, [0, 0])
        stats[0 if ok else 1] += 1
        extra = f", lost {lost:.2f} s" if lost is not None else ""
        print(f"round {rnd}: {op}, cut {delay} ms in: {'ok' if ok else 'FAILED'}{extra}")
        for p in problems:
            print(f"    {p}")
    print("cuts survived per operation: " + ", ".join(f"{op} {s[0]}/{s[0] + s[1]}" for op, s in sorted(per_op.items())))
    if losses:
        print(f"seconds lost per recording cut mid-take: median {statistics.median(losses):.2f}, max {max(losses):.2f}, "
              f"min {min(losses):.2f} ({len(losses)} recordings)")
    summary = {"passed": passed, "failed": failed, "perOperation": per_op, "secondsLost": losses}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
