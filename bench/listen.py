#!/usr/bin/env python3
"""Hands-free listening (issue 49), measured with a hidden set the script builds (seeded), beside a
"start if sound, stop if silence" recorder (sox's silence effect) capturing the same sound at the same time.

  sound   A private PulseAudio server with a mono 48 kHz null sink `mic`; paplay --latency-msec=10 plays
          one continuous file into it in real time (the sink's monitor delivers nothing while nothing plays,
          so room noise, pauses and all are in the file). recd captures `pulse:mic.monitor`; the peer, sox,
          reads the same monitor through ALSA's pulse plugin, at the same time.
  phrases ~12 phrases spoken by espeak-ng (voices en, en-us, en+f3, en+m3, ..., 140-190 words a minute,
          some 18 dB quieter), each with its own first and last word, separated by 0.5-10 s, with
          continuous pink room noise (-60 dBFS RMS) under everything, 2 s of it before the first phrase,
          and music passages (sox synth chords) and door slams (short loud noise bursts) in some pauses.
          recd: `recctl listen start` (defaults: silence 2 s, pre-roll 1 s, min 1 s), Silero VAD from the
          transcriber, Whisper at normal priority. Each phrase is found in the recordings by aligning each
          file on the set (cross-correlation), so it is known which phrases each recording holds and where
          it starts; then the transcript must hold the phrase's first and last words.
  noise   A fresh recd, armed the same way, and sox, on `--noise-minutes` (10) of sound without speech:
          first `--cpu-seconds` (60) of room noise alone (CPU while armed in silence, RSS at the start),
          then room noise with music passages, door slams and a fan's hum. Counted: recordings made
          (goal <= 1). CPU: recd + its children (media workers, the voice detector) from /proc, as % of one
          core (goal <= 2 %); sox's own. RSS (VmRSS) of recd and each child at the start and end.
  peer    `sox -t alsa pulse:mic.monitor -r 48000 -c 1 -b 16 OUT.wav silence 1 0.1 -45d 1 2.0 -45d : newfile
          : restart`: a file from the first 0.1 s louder than -45 dBFS to 2 s quieter, as Linux's
          audio-recorder and fmedia --start-dblevel do. Its files from the phrases are imported into the
          same recd (`recctl import`) and transcribed by the same Whisper.

Writes the "## Listening (bench/listen.py)" section of BENCHMARKS.md (not with --no-write).
Options: --quick (5 phrases, 1 minute of noise, a 30 s CPU window), --phrases N, --noise-minutes M,
--cpu-seconds S, --seed N, --no-write. Env: KEEP_WORK=1 keeps the work folder (sound, recordings, logs).
Needs the release build (built if missing), the transcriber (.build/transcribe: scripts/install-deps.sh
--transcribe), espeak-ng, sox, ffmpeg, curl, pulseaudio, pulseaudio-utils, libasound2-plugins; numpy (the
system's, else the transcriber's venv: the script runs itself again with it).
"""
import argparse, atexit, datetime, json, os, random, re, shutil, signal, statistics, subprocess, sys, tempfile, time, wave

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRANSCRIBER = os.path.join(REPO, ".build", "transcribe")
VENV_PYTHON = os.path.join(TRANSCRIBER, "venv", "bin", "python3")
try:
    import numpy as np
except ImportError:
    if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(VENV_PYTHON):
        os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("bench/listen.py: needs numpy (apt-get install python3-numpy, or the transcriber's venv)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmarks_md import PrivatePulse, launch_recd, recd_cpu_seconds, write_section

TITLE = "## Listening (bench/listen.py)"
SR = 48000          # the set and the microphone
AR = 16000          # analysis rate (alignment, onsets)
DEVICE = "pulse:mic.monitor"
PLAY_LATENCY_MS = 40    # the sink renders, and its monitor delivers, in blocks this long: recd's own period
ROOM_DB = -60.0     # room noise, dBFS RMS
SPEECH_DB = -24.0   # a phrase's RMS over its sound; the quiet ones 18 dB lower
QUIET_DB = SPEECH_DB - 18
ONSET_DB = -45.0    # "first speech": the first 10 ms window louder than this (15 dB over the room noise)
SOX_EFFECT = ["silence", "1", "0.1", "-45d", "1", "2.0", "-45d", ":", "newfile", ":", "restart"]

# Phrases: every first word and every last word is in no other phrase (no numbers, no spellings that differ
# between British and American English). Chosen from a larger pool by what Whisper base hears right in
# espeak-ng's voices over the room noise, loud and quiet (words like "Buy", "Friday", "photographs" or
# "Schedule" it mishears in most voices): a miss should be a cut, not the transcriber's.
PHRASES = [
    "Tomorrow the plumber comes to fix the kitchen sink.",
    "Maybe we should paint the fence green this summer.",
    "Please send the invoice to the accountant.",
    "Find the spare key under the garden bench.",
    "Clean the windows in the living room.",
    "Replace the battery in the smoke alarm.",
    "Return the library books before Monday.",
    "Tell the landlord the window is broken.",
    "Yesterday the heating stopped working again.",
    "Pick up the parcel from the post office.",
    "Perhaps we could visit the museum on Sunday.",
    "Everyone should read the safety instructions.",
    "Water the garden when the sun goes down.",
]
VOICES = ["en", "en-us", "en+f3", "en+m3", "en+f2", "en-us+m2"]


def log(*a):
    print("[listen]", *a, file=sys.stderr, flush=True)


def words(text):
    """Lower case, letters only."""
    return re.sub(r"[^a-z ]", "", re.sub(r"[-\s]+", " ", text.lower())).split()


# ---------------------------------------------------------------- sound

def read_wav(path):
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def write_wav(path, x, rate=SR):
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def db(v):
    return 20 * np.log10(max(v, 1e-12))


def at_rms(x, target_db):
    return (x * (10 ** (target_db / 20) / max(rms(x), 1e-12))).astype(np.float32)


def colored_noise(n, rng, power):
    """Noise of n samples whose power falls as 1/f**power (1 pink, 2 brown), nothing under 20 Hz, RMS 1."""
    m = 1 << max(10, (n - 1).bit_length())
    f = np.fft.rfftfreq(m, 1 / SR)
    spec = rng.standard_normal(len(f)) + 1j * rng.standard_normal(len(f))
    f[0] = 1.0
    spec /= f ** (power / 2)
    spec[f < 20] = 0
    x = np.fft.irfft(spec, m)[:n]
    return (x / rms(x)).astype(np.float32)


def sox(*args):
    r = subprocess.run(["sox", "-R", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"sox {' '.join(args)}: {r.stderr}")


def fade(x, seconds):
    n = min(int(seconds * SR), len(x) // 2)
    if n:
        ramp = np.linspace(0, 1, n, dtype=np.float32)
        x[:n] *= ramp; x[-n:] *= ramp[::-1]
    return x


class Sounds:
    """The pieces, made once: espeak's phrases, chords, slams, a fan."""

    def __init__(self, work, rng):
        self.dir = os.path.join(work, "pieces")
        os.makedirs(self.dir, exist_ok=True)
        self.rng = rng
        self.chords = {}

    def phrase(self, i, text, voice, wpm):
        raw, wav = os.path.join(self.dir, f"phrase{i}-espeak.wav"), os.path.join(self.dir, f"phrase{i}.wav")
        r = subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, text], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"espeak-ng: {r.stderr}")
        sox(raw, "-r", str(SR), "-c", "1", "-b", "16", wav)
        x = read_wav(wav)
        loud = np.nonzero(np.abs(x) > 1e-3)[0]   # espeak's own silence at both ends is digital zero
        return x[loud[0]:loud[-1] + 1].copy()

    def chord(self, notes, timbre, seconds):
        key = (notes, timbre, seconds)
        if key not in self.chords:
            path = os.path.join(self.dir, f"chord{len(self.chords)}.wav")
            spec = []
            for j, n in enumerate(notes.split()):
                spec += [timbre] + (["mix"] if j else []) + [n]
            sox("-n", "-r", str(SR), "-c", "1", "-b", "16", path, "synth", str(seconds), *spec, "fade", "0.01", str(seconds), "0.08")
            self.chords[key] = read_wav(path)
        return self.chords[key]

    def music(self, seconds, level_db):
        """Chords (a I-vi-IV-V progression, plucked or organ-like) with a bass note, `seconds` long."""
        progressions = [["C4 E4 G4 C3", "A3 C4 E4 A2", "F3 A3 C4 F2", "G3 B3 D4 G2"],
                        ["D4 F#4 A4 D3", "B3 D4 F#4 B2", "G3 B3 D4 G2", "A3 C#4 E4 A2"]]
        prog = progressions[self.rng.integers(len(progressions))]
        timbre = ["pluck", "trapezium", "sine"][self.rng.integers(3)]
        beat = float(self.rng.choice([0.5, 0.6, 0.75]))
        parts, k = [], 0
        while sum(len(p) for p in parts) < seconds * SR:
            parts.append(self.chord(prog[k % 4], timbre, beat)); k += 1
        x = np.concatenate(parts)[:int(seconds * SR)].copy()
        return fade(at_rms(x, level_db), 0.05)

    def slam(self):
        """A door: 150-250 ms of brown noise, a 2 ms attack and a fast decay, peak 0.8-0.95."""
        n = int(float(self.rng.uniform(0.15, 0.25)) * SR)
        x = colored_noise(n, self.rng, 2)
        t = np.arange(n) / SR
        x *= np.minimum(t / 0.002, 1) * np.exp(-t / 0.04)
        return (x * (float(self.rng.uniform(0.8, 0.95)) / np.max(np.abs(x)))).astype(np.float32)

    def fan(self, seconds, level_db):
        """A fan: low rumble (brown noise) and a hum at 100 Hz with harmonics, faded in and out over 1 s."""
        n = int(seconds * SR)
        t = np.arange(n) / SR
        hum = np.sin(2 * np.pi * 100 * t) + 0.5 * np.sin(2 * np.pi * 200 * t) + 0.25 * np.sin(2 * np.pi * 300 * t)
        x = colored_noise(n, self.rng, 2) + 0.7 * (hum / rms(hum)).astype(np.float32)
        return fade(at_rms(x, level_db), 1.0)


def build_phrase_set(work, n_phrases, seed):
    """The hidden set: phrases, pauses, music and slams over room noise. Returns (path, truth, events, seconds)."""
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    s = Sounds(work, rng)
    texts = rnd.sample(PHRASES, n_phrases)
    n_quiet = max(1, round(n_phrases / 4))
    quiet = set(rnd.sample(range(n_phrases), n_quiet))
    # The pauses after each phrase but the last: short ones (< silence: may merge), middling, long,
    # and pauses holding music or a door's slam.
    kinds = ["short", "music", "slam", "mid", "long", "short", "slam", "mid", "long", "music", "mid", "short", "long", "mid", "slam"]
    gaps = kinds[:n_phrases - 1]
    rnd.shuffle(gaps)
    pieces, truth, events = [], [], []   # pieces: (start s, samples)
    t = 2.0
    for i, text in enumerate(texts):
        voice, wpm = VOICES[i % len(VOICES)] if i < len(VOICES) else rnd.choice(VOICES), rnd.randrange(140, 191, 5)
        x = s.phrase(i, text, voice, wpm)
        level = QUIET_DB if i in quiet else SPEECH_DB
        x = at_rms(x, level)
        pieces.append((t, x))
        w = words(text)
        truth.append(dict(i=i, text=text, first=w[0], last=w[-1], voice=voice, wpm=wpm, level=level, quiet=i in quiet,
                          start=t, end=t + len(x) / SR))
        t += len(x) / SR
        if i == n_phrases - 1:
            t += 4.0   # room noise to end on: more than --silence, so the last utterance ends while sound plays
            break
        kind = gaps[i]
        if kind == "short":
            gap = rnd.uniform(0.5, 1.5)
        elif kind == "mid":
            gap = rnd.uniform(2.5, 5.0)
        elif kind == "long":
            gap = rnd.uniform(6.0, 10.0)
        elif kind == "slam":
            gap = rnd.uniform(4.0, 7.0)
            sl = s.slam()
            at = t + rnd.uniform(1.5, gap - 1.5 - len(sl) / SR)
            pieces.append((at, sl)); events.append(dict(kind="door slam", start=at, end=at + len(sl) / SR))
        else:   # music
            length = rnd.uniform(3.0, 5.0)
            gap = length + rnd.uniform(4.0, 5.0)
            at = t + rnd.uniform(2.0, gap - length - 2.0)
            m = s.music(length, rnd.uniform(-30, -24))
            pieces.append((at, m)); events.append(dict(kind="music", start=at, end=at + length))
        truth[-1]["gap_after"] = gap
        truth[-1]["gap_kind"] = kind
        t += gap
    total = t
    x = at_rms(colored_noise(int(total * SR), rng, 1), ROOM_DB)
    for start, piece in pieces:
        a = int(round(start * SR))
        x[a:a + len(piece)] += piece[:len(x) - a]
    path = os.path.join(work, "phrases.wav")
    write_wav(path, x)
    return path, truth, events, total


def build_noise_set(work, minutes, cpu_seconds, seed):
    """Sound without speech: room noise alone for the CPU window, then room noise with music, door slams
    and a fan. Returns (path, events, seconds, (cpu window start, end))."""
    rnd = random.Random(seed + 1)
    rng = np.random.default_rng(seed + 1)
    s = Sounds(work, rng)
    window = (5.0, 5.0 + cpu_seconds)
    t = window[1] + 5.0
    end = t + minutes * 60
    pieces, events = [], []
    order = ["music", "slam", "fan"]
    rnd.shuffle(order)
    k = 0
    while True:
        t += rnd.uniform(4.0, 15.0)
        kind = order[k] if k < len(order) else rnd.choices(["slam", "music", "fan", "slams"], [0.35, 0.35, 0.15, 0.15])[0]
        k += 1
        if kind == "music":
            length = rnd.uniform(3.0, 10.0)
            piece = s.music(length, rnd.uniform(-30, -22))
            name = "music"
        elif kind == "fan":
            length = min(rnd.uniform(20.0, 45.0), end - 3 - t)
            if length < 10:
                length = 45.0   # no room: refused below
            piece = s.fan(length, rnd.uniform(-44, -38))
            name = "fan"
        elif kind == "slams":   # a door opened and shut
            a, b = s.slam(), s.slam()
            gap = int(rnd.uniform(0.4, 1.2) * SR)
            piece = np.concatenate([a, np.zeros(gap, np.float32), b])
            name = "two door slams"
        else:
            piece = s.slam()
            name = "door slam"
        if t + len(piece) / SR > end - 3:
            if kind in ("slam", "slams"):
                break
            k = max(k, len(order))   # no room for it: a slam instead, or the end
            t -= 4.0
            continue
        pieces.append((t, piece))
        events.append(dict(kind=name, start=t, end=t + len(piece) / SR))
        t += len(piece) / SR
    total = end
    x = at_rms(colored_noise(int(total * SR), rng, 1), ROOM_DB)
    for start, piece in pieces:
        a = int(round(start * SR))
        x[a:a + len(piece)] += piece[:len(x) - a]
    path = os.path.join(work, "noise.wav")
    write_wav(path, x)
    return path, events, total, window


# ---------------------------------------------------------------- analysis

def decode(path, rate=AR):
    r = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", str(rate), "-f", "s16le", "-"], capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"ffmpeg {path}: {r.stderr.decode()[:300]}")
    return np.frombuffer(r.stdout, dtype="<i2").astype(np.float32) / 32768.0


class Aligner:
    """Where a file's sound is in the set: the lag of the cross-correlation's peak (FFT), and how well it
    matches there (normalized correlation, 1 = the same samples)."""

    def __init__(self, set_path):
        self.x = decode(set_path)
        self.size = 1 << (2 * len(self.x) - 1).bit_length()
        self.X = np.fft.rfft(self.x, self.size)
        self.energy = np.concatenate([[0.0], np.cumsum(np.square(self.x, dtype=np.float64))])

    def locate(self, y):
        if len(y) == 0 or len(y) >= len(self.x):
            return None, 0.0
        c = np.fft.irfft(self.X * np.conj(np.fft.rfft(y, self.size)), self.size)[:len(self.x) - len(y) + 1]
        c = c / np.sqrt(np.maximum(self.energy[len(y):] - self.energy[:len(self.x) - len(y) + 1], 1e-12))
        k = int(np.argmax(c))
        return k / AR, float(c[k] / np.sqrt(max(float(np.sum(np.square(y, dtype=np.float64))), 1e-12)))


def normalized(r, c, n):
    """Cross-correlation r of a piece of n samples along c, divided by the energy of c under it: a quiet
    stretch that matches beats a loud one that does not."""
    e = np.concatenate([[0.0], np.cumsum(np.square(c, dtype=np.float64))])
    return r / np.sqrt(np.maximum(e[n:n + len(r)] - e[:len(r)], 1e-12))


def capture_drift(capture_path, set_path, anchors):
    """What the microphone delivered against the set: the lag of each anchor ((start, end) in the set: the
    room noise it begins with, each phrase, music passage, slam) in the capture, in order. All equal: no
    glitch; each later one larger by the silence an underrun put in. (The capture may begin with silence: the
    sink runs on after a first sound, and its monitor then delivers zeros until the next.)
    Returns (the first lag, the largest lag less the smallest), seconds."""
    c = np.fromfile(capture_path, dtype="<i2").astype(np.float32) / 32768.0
    x = read_wav(set_path)
    lags = []
    for start, end in sorted(anchors):
        a, b = int(start * SR), int(min(end, start + 2.0) * SR)
        guess = int(lags[-1] * SR) if lags else 0
        lo, hi = max(0, a + guess - (1 if lags else 2) * SR), min(len(c), b + guess + (4 if lags else 30) * SR)
        if b <= a or hi - lo <= b - a:
            continue
        size = 1 << (hi - lo + b - a).bit_length()
        r = np.fft.irfft(np.fft.rfft(c[lo:hi], size) * np.conj(np.fft.rfft(x[a:b], size)), size)[:hi - lo - (b - a) + 1]
        lags.append((lo + int(np.argmax(normalized(r, c[lo:hi], b - a))) - a) / SR)
    if not lags:
        return None, None
    return lags[0], max(lags) - min(lags)


def first_sound(y, threshold_db=ONSET_DB):
    """Seconds from the start to the first 10 ms window louder than threshold_db (RMS); None if none."""
    n = int(0.01 * AR)
    if len(y) < n:
        return None
    frames = y[:len(y) // n * n].reshape(-1, n)
    loud = np.nonzero(np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1)) > 10 ** (threshold_db / 20))[0]
    return float(loud[0] * n / AR) if len(loud) else None


def analyse(files, aligner, truth, events, silence):
    """files: [{name, path, text (or None)}]. Fills each file's place in the set, phrases and onsets, and
    returns the per-phrase outcome."""
    for f in files:
        y = decode(f["path"])
        f["seconds"] = len(y) / AR
        f["start"], f["match"] = aligner.locate(y)
        f["end"] = (f["start"] or 0) + f["seconds"]
        f["onset"] = first_sound(y)
        f["phrases"] = [p["i"] for p in truth if f["start"] is not None and p["start"] < f["end"] and p["end"] > f["start"]]
        f["events"] = [e["kind"] for e in events if f["start"] is not None and e["start"] < f["end"] and e["end"] > f["start"]]
        f["heard"] = words(f["text"]) if f.get("text") is not None else None
    outcome = []
    for p in truth:
        holding = [f for f in files if p["i"] in f["phrases"]]
        o = dict(i=p["i"], files=[f["name"] for f in holding])
        if not holding:
            o["kind"] = "missed"
        elif len(holding) > 1:
            o["kind"] = "split"
        else:
            f = holding[0]
            together = sorted(f["phrases"])
            if len(together) == 1:
                o["kind"] = "alone"
            else:
                gaps = [truth[b]["start"] - truth[a]["end"] for a, b in zip(together, together[1:])]
                o["kind"] = "merged" if max(gaps) < silence else "merged-long"
            o["whole"] = f["start"] <= p["start"] and f["end"] >= p["end"]
            o["lead"] = p["start"] - f["start"]           # the file's sound before the phrase's first sample
            if f["heard"] is not None:
                o["first"], o["last"] = p["first"] in f["heard"], p["last"] in f["heard"]
        outcome.append(o)
    return outcome


# ---------------------------------------------------------------- processes

def proc_tree(pid):
    """recd and its children (pid, name)."""
    out = [(pid, "recd")]
    kids = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                kids.update(int(c) for c in open(f"/proc/{pid}/task/{task}/children").read().split())
            except OSError:
                pass
    except OSError:
        return out
    for c in sorted(kids):
        try:
            cmd = open(f"/proc/{c}/cmdline", "rb").read().split(b"\0")
            name = os.path.basename(cmd[0].decode()) if cmd and cmd[0] else open(f"/proc/{c}/comm").read().strip()
            script = next((os.path.basename(a.decode()) for a in cmd[1:] if a.endswith(b".py")), None)
            label = name + (f" {script}" if script else "")
            if b"--voice-detector" in cmd:
                label = f"voice detector ({label} --voice-detector)"
            elif script:
                label = f"transcriber ({label})"
            out.append((c, label))
        except OSError:
            pass
    return out


def rss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def own_cpu(pid):
    """utime + stime of one process, seconds."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def machine_busy():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    f = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 phrases, 1 minute of noise, a 30 s CPU window")
    ap.add_argument("--phrases", type=int)
    ap.add_argument("--noise-minutes", type=float)
    ap.add_argument("--cpu-seconds", type=float)
    ap.add_argument("--seed", type=int, default=49)
    ap.add_argument("--no-write", action="store_true", help="print the section, leave BENCHMARKS.md alone")
    args = ap.parse_args()
    n_phrases = args.phrases or (5 if args.quick else 12)
    noise_minutes = args.noise_minutes if args.noise_minutes is not None else (1 if args.quick else 10)
    cpu_seconds = args.cpu_seconds or (30 if args.quick else 60)
    if not 2 <= n_phrases <= len(PHRASES):
        sys.exit(f"--phrases: 2 to {len(PHRASES)}")
    for p in PHRASES:   # a phrase's first and last words are in no other phrase
        w = words(p)
        assert not any({w[0], w[-1]} & set(words(q)) for q in PHRASES if q != p), p

    missing = [pkg for tool, pkg in (("espeak-ng", "espeak-ng"), ("sox", "sox"), ("ffmpeg", "ffmpeg"), ("curl", "curl"),
                                     ("pulseaudio", "pulseaudio"), ("paplay", "pulseaudio-utils"), ("pactl", "pulseaudio-utils"),
                                     ("arecord", "alsa-utils"))
               if not shutil.which(tool)]
    if missing:
        sys.exit(f"bench/listen.py: missing tools: apt-get install {' '.join(sorted(set(missing)))}")
    if not os.path.exists(os.path.join(TRANSCRIBER, ".installed")):
        sys.exit(f"bench/listen.py: the transcriber is not installed in {TRANSCRIBER} (scripts/install-deps.sh --transcribe): "
                 "listening's Silero VAD and the transcripts come from it")
    bin_dir = os.path.join(REPO, ".build", "release")
    if not all(os.access(os.path.join(bin_dir, b), os.X_OK) for b in ("recd", "recctl", "recd-media")):
        log("building the release products (swift build -c release)")
        subprocess.run(["swift", "build", "-c", "release"], cwd=REPO, check=True)
    recd_bin, recctl_bin = os.path.join(bin_dir, "recd"), os.path.join(bin_dir, "recctl")

    work = tempfile.mkdtemp(prefix="recd-bench-listen-")
    pulse = PrivatePulse(work, "mic")
    procs = []

    def cleanup():
        for p in reversed(procs):
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill(); p.wait()
                except OSError:
                    pass
        pulse.stop()
        if os.environ.get("KEEP_WORK"):
            log(f"work kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    atexit.register(cleanup)

    def on_signal(sig, _frame):
        sys.exit(f"bench/listen.py: signal {sig}")   # SystemExit runs atexit
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    # A mono 48 kHz microphone (PrivatePulse's sink is stereo).
    def start_pulse():
        pa = os.path.join(pulse.xdg, "pa.pa")
        open(pa, "w").write("load-module module-null-sink sink_name=mic rate=48000 channels=1\n"
                            "load-module module-native-protocol-unix\n")
        r = subprocess.run(["pulseaudio", "-n", "-F", pa, "--exit-idle-time=-1", "--daemonize=yes", "--use-pid-file=yes",
                            f"--log-target=file:{pulse.log}"], stderr=open(pulse.log, "a"))
        if r.returncode != 0:
            sys.exit(f"pulseaudio did not start; see {pulse.log}")
        for _ in range(50):
            if subprocess.run(["pactl", "info"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit("pulseaudio is not answering")
        # The server at a real-time priority too, when it may: on a busy machine (a VM under TCG, a build)
        # it feeds the sink late, and the microphone then delivers silence in the middle of the sound.
        if os.geteuid() == 0 and shutil.which("chrt"):
            pid = open(os.path.join(pulse.xdg, "pulse", "pid")).read().split()[0]
            subprocess.run(["chrt", "-a", "-f", "-p", "20", pid], capture_output=True)

    def recctl(sock, *a, check=True):
        r = subprocess.run([recctl_bin, "--socket", sock, *a], capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            sys.exit(f"recctl {' '.join(a)}: {r.stderr or r.stdout}")
        return r

    def recctl_json(sock, *a):
        return json.loads(recctl(sock, "--json", *a).stdout)

    def start_recd(name):
        data, sock = os.path.join(work, f"data-{name}"), os.path.join(work, f"{name}.sock")
        p, _ = launch_recd(recd_bin, data, sock, os.path.join(work, f"recd-{name}.log"), "--capture-device", DEVICE,
                           "--transcriber", TRANSCRIBER, "--transcribe-priority", "normal", "--log-level", "info", procs=procs)
        return p, data, sock

    def start_sox(folder):
        os.makedirs(folder)
        err = open(os.path.join(work, os.path.basename(folder) + ".log"), "w")
        p = subprocess.Popen(["sox", "-q", "-V1", "-t", "alsa", "-r", str(SR), "-c", "1", DEVICE, "-b", "16",
                              os.path.join(folder, "out.wav"), *SOX_EFFECT], stdout=subprocess.DEVNULL, stderr=err)
        procs.append(p)
        return p

    def stop_sox(p, folder):
        """SIGINT ends sox's input; it closes the file it writes. Returns its files with sound, in order."""
        p.send_signal(signal.SIGINT)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()
        out = []
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.getsize(path) > 44 + 2 * int(0.01 * SR):
                out.append(path)
        return out

    def start_arecord(name):
        """What the microphone delivers, to a file: the same device with recd's period and buffer (1920 and
        24000 frames). The sink's monitor delivers nothing before the set plays, so the file should be the set."""
        p = subprocess.Popen(["arecord", "-q", "-D", DEVICE, "-f", "S16_LE", "-r", str(SR), "-c", "1", "--period-size=1920",
                              "--buffer-size=24000", "-t", "raw", os.path.join(work, name)],
                             stderr=open(os.path.join(work, name + ".log"), "w"))
        procs.append(p)
        return p

    def stop_arecord(p, name):
        """Seconds the microphone delivered."""
        p.send_signal(signal.SIGINT)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()
        return os.path.getsize(os.path.join(work, name)) / (2 * SR)

    def play(path):
        """paplay, at a real-time priority when it may: a player starved by a busy machine underruns, and the
        sink then renders silence into what the microphone delivers (checked below: `capture`)."""
        rt = ["chrt", "-f", "10"] if os.geteuid() == 0 and shutil.which("chrt") else []
        p = subprocess.Popen(rt + ["paplay", f"--latency-msec={PLAY_LATENCY_MS}", "-d", "mic", path])
        procs.append(p)
        return p

    def events_log(sock, name):
        p = subprocess.Popen([recctl_bin, "--socket", sock, "events", "--type", "listen.status", "--type", "listen.utterance"],
                             stdout=open(os.path.join(work, f"events-{name}.log"), "w"), stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    def wait_transcripts(sock, ids, limit=900):
        t0 = time.time()
        texts = {}
        while len(texts) < len(ids):
            for rid in ids:
                if rid in texts:
                    continue
                t = json.loads(subprocess.run(
                    ["curl", "-s", "--unix-socket", sock, f"http://recd/v1/recordings/{rid}/transcript"],
                    capture_output=True, text=True).stdout or "{}")
                if t.get("state") in ("done", "failed", "none"):
                    texts[rid] = t.get("text", "") if t.get("state") == "done" else None
                    if t.get("state") != "done":
                        log(f"transcript of {rid}: {t.get('state')} {t.get('error') or ''}")
            if time.time() - t0 > limit:
                log(f"transcripts not done after {limit} s; the rest counted as missing")
                break
            time.sleep(1)
        return texts

    def recordings(sock):
        return sorted(recctl_json(sock, "list", "--limit", "1000")["recordings"], key=lambda r: r["createdAt"])

    date = datetime.datetime.now(datetime.timezone.utc)
    head = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    built = datetime.datetime.fromtimestamp(os.path.getmtime(recd_bin), datetime.timezone.utc).strftime("%H:%M")
    build_note = f"linked {built} UTC; HEAD {head or '?'}"
    load_before = open("/proc/loadavg").read().split()[:3]
    log(f"work: {work}; building the sound (seed {args.seed})")
    set_path, truth, set_events, set_seconds = build_phrase_set(work, n_phrases, args.seed)
    noise_path, noise_events, noise_seconds, window = build_noise_set(work, noise_minutes, cpu_seconds, args.seed)
    json.dump(dict(phrases=truth, events=set_events, noise_events=noise_events), open(os.path.join(work, "truth.json"), "w"), indent=1)
    log(f"phrase set: {set_seconds:.1f} s, {n_phrases} phrases; noise: {noise_seconds:.0f} s ({len(noise_events)} events)")
    start_pulse()

    # ---- 1. the phrases
    recd, data, sock = start_recd("phrases")
    armed = recctl_json(sock, "listen", "start")
    settings = armed["settings"]
    detector, detector_note = armed.get("detector"), armed.get("detectorNote")
    if detector != "silero":
        log(f"the detector is {detector}: {detector_note}")
    silence = settings["silence"]
    ev = events_log(sock, "phrases")
    sox_dir = os.path.join(work, "sox-phrases")
    peer = start_sox(sox_dir)
    mic = start_arecord("capture-phrases.wav")
    time.sleep(1.0)
    log(f"playing the phrase set ({set_seconds:.0f} s)")
    player = play(set_path)
    player.wait()
    for _ in range(100):   # the last utterance ends (the set ends on more than --silence of room noise)
        status = recctl_json(sock, "listen", "status")
        if status["state"] != "speaking":
            break
        time.sleep(0.1)
    recctl_json(sock, "listen", "stop")
    status = dict(status, utterances=status["utterances"] + (status["state"] == "speaking"))
    sox_files = stop_sox(peer, sox_dir)
    captured = stop_arecord(mic, "capture-phrases.wav")
    ev.terminate()
    recs = recordings(sock)
    lag, drift = capture_drift(os.path.join(work, "capture-phrases.wav"), set_path,
                               [(0.5, 1.5)] + [(p["start"], p["end"]) for p in truth] + [(e["start"], e["end"]) for e in set_events])
    log(f"the microphone delivered {captured:.2f} s for the set's {set_seconds:.2f} s; the set at {lag} s in it, "
        f"{drift} s of silence put in by underruns")
    log(f"recd: {len(recs)} recordings ({status['utterances']} kept, {status['dropped']} dropped); sox: {len(sox_files)} files")
    texts = wait_transcripts(sock, [r["id"] for r in recs])
    sox_ids = []
    for i, path in enumerate(sox_files):
        sox_ids.append(recctl_json(sock, "import", path, "--title", f"sox {i + 1}")["id"])
    sox_texts = wait_transcripts(sock, sox_ids)
    # The control: each phrase as the set has it (1 s of room noise either side), imported and transcribed
    # by the same Whisper: what the transcripts can be at best.
    whole_set = read_wav(set_path)
    control_ids = []
    for p in truth:
        path = os.path.join(work, "pieces", f"control{p['i']}.wav")
        write_wav(path, whole_set[int(max(0, p["start"] - 1) * SR):int((p["end"] + 1) * SR)])
        control_ids.append(recctl_json(sock, "import", path, "--title", f"phrase {p['i'] + 1}")["id"])
    control_texts = wait_transcripts(sock, control_ids)
    control = []
    for p, rid in zip(truth, control_ids):
        heard = words(control_texts.get(rid) or "")
        control.append(dict(first=p["first"] in heard, last=p["last"] in heard, text=control_texts.get(rid)))
    del whole_set
    backs = [float(v) for v in re.findall(r"listening: speech; recording \S+ from ([0-9.]+) s back", open(os.path.join(work, "recd-phrases.log")).read())]
    recd.send_signal(signal.SIGTERM); recd.wait(30)
    aligner = Aligner(set_path)
    recd_files = [dict(name=f"r{i + 1}", path=os.path.join(data, r["file"]), text=texts.get(r["id"])) for i, r in enumerate(recs)]
    peer_files = [dict(name=f"s{i + 1}", path=p, text=sox_texts.get(rid)) for i, (p, rid) in enumerate(zip(sox_files, sox_ids))]
    recd_out = analyse(recd_files, aligner, truth, set_events, silence)
    peer_out = analyse(peer_files, aligner, truth, set_events, silence)
    del aligner
    for f in recd_files + peer_files:
        log(f"  {f['name']}: {f['start'] if f['start'] is None else round(f['start'], 2)}+{f['seconds']:.2f} s (match {f['match']:.2f}) "
            f"phrases {f['phrases']} events {f['events']} onset {f['onset']}: {f['text']!r}")

    # ---- 2 and 3. the noise: false recordings, CPU and memory while armed
    recd, data, sock = start_recd("noise")
    armed2 = recctl_json(sock, "listen", "start")
    ev = events_log(sock, "noise")
    sox_dir = os.path.join(work, "sox-noise")
    peer = start_sox(sox_dir)
    # The floor: capture alone, the same device with recd's period and buffer (1920 and 24000 frames).
    floor = start_arecord("capture-noise.wav")
    time.sleep(2.0)   # the detector started
    log(f"playing the noise ({noise_seconds / 60:.1f} min)")
    t0 = time.time()
    player = play(noise_path)

    def sample():
        tree = proc_tree(recd.pid)
        return dict(t=time.time() - t0, cpu=recd_cpu_seconds(recd.pid), sox=own_cpu(peer.pid), floor=own_cpu(floor.pid), busy=machine_busy(),
                    load=open("/proc/loadavg").read().split()[0],
                    procs=[(pid, name, rss_kb(pid), own_cpu(pid)) for pid, name in tree], sox_rss=rss_kb(peer.pid))
    samples = []
    marks = {}
    while player.poll() is None:
        now = time.time() - t0
        if "a" not in marks and now >= window[0]:
            marks["a"] = sample(); samples.append(marks["a"])
        elif "b" not in marks and now >= window[1]:
            marks["b"] = sample(); samples.append(marks["b"])
        elif not samples or now - samples[-1]["t"] >= 10:
            samples.append(sample())
            if len(samples) % 60 == 0:   # every 10 minutes, in the log too: a run stopped later still says it
                s0, s1 = samples[0], samples[-1]
                log(f"  {s1['t'] / 60:.0f} min: recd and its children {sum(r for _, _, r, _ in s1['procs']) / 1024:.1f} MB "
                    f"(at the start {sum(r for _, _, r, _ in s0['procs']) / 1024:.1f} MB), CPU "
                    f"{100 * (s1['cpu'] - s0['cpu']) / max(s1['t'] - s0['t'], 1e-9):.2f} % of one core since the start")
                # The last 10 minutes alone, per process (recd, its detector): a trend, not an average
                # since the start, and whose it is.
                w0 = samples[max(0, len(samples) - 61)]   # the first window starts at the first sample
                span = max(s1["t"] - w0["t"], 1e-9)
                before = {pid: cpu for pid, _, _, cpu in w0["procs"]}
                per = ", ".join(f"{name} {100 * (cpu - before.get(pid, 0.0)) / span:.2f} %" for pid, name, _, cpu in s1["procs"])
                log(f"    the last 10 min: recd and its children {100 * (s1['cpu'] - w0['cpu']) / span:.2f} % ({per}); "
                    f"sox {100 * (s1['sox'] - w0['sox']) / span:.2f} %, arecord {100 * (s1['floor'] - w0['floor']) / span:.2f} %; "
                    f"load {s1['load']}")
        time.sleep(0.05)
    marks["end"] = sample(); samples.append(marks["end"])
    time.sleep(1.0)
    status2 = recctl_json(sock, "listen", "status")
    recctl_json(sock, "listen", "stop")
    noise_sox = stop_sox(peer, sox_dir)
    captured_noise = stop_arecord(floor, "capture-noise.wav")
    ev.terminate()
    noise_recs = recordings(sock)
    lag2, drift2 = capture_drift(os.path.join(work, "capture-noise.wav"), noise_path,
                                 [(0.5, 2.0), (window[1], window[1] + 2.0)] + [(e["start"], e["end"]) for e in noise_events])
    log(f"the microphone delivered {captured_noise:.2f} s for the noise's {noise_seconds:.2f} s; "
        f"{drift2} s of silence put in by underruns")
    log(f"noise: recd {len(noise_recs)} recordings ({status2['utterances']} kept, {status2['dropped']} dropped); sox {len(noise_sox)} files")
    recd.send_signal(signal.SIGTERM); recd.wait(30)
    load_after = open("/proc/loadavg").read().split()[:3]
    aligner = Aligner(noise_path)
    noise_recd_files = [dict(name=f"r{i + 1}", path=os.path.join(data, r["file"])) for i, r in enumerate(noise_recs)]
    noise_peer_files = [dict(name=f"s{i + 1}", path=p) for i, p in enumerate(noise_sox)]
    analyse(noise_recd_files, aligner, [], noise_events, silence)
    # Each placement is an FFT the size of the noise: an hour's takes ~10 s a file here, so a long run
    # places the peer's first 30 files only (all are counted).
    placed = 300 if noise_seconds <= 15 * 60 else 30
    peer_placed_note = f" (the first {placed} of {len(noise_peer_files)} placed)" if len(noise_peer_files) > placed else ""
    analyse(noise_peer_files[:placed], aligner, [], noise_events, silence)
    del aligner
    # The files not placed are counted and their length summed all the same: from their size (sox's
    # mono 16-bit 48 kHz WAV, 44 bytes of header; the last one's header may not be final).
    for f in noise_peer_files[placed:]:
        f["seconds"] = max(0, os.path.getsize(f["path"]) - 44) / (2 * 48000)

    # ---------------------------------------------------------------- the section
    def med_range(values, fmt="{:.2f}"):
        v = [x for x in values if x is not None]
        if not v:
            return "–"
        return (fmt + " s (") .format(statistics.median(v)) + (fmt + "–" + fmt).format(min(v), max(v)) + ")"

    def count(out, *kinds):
        return sum(1 for o in out if o["kind"] in kinds)

    def words_ok(out):
        return sum(1 for o in out if o.get("first") and o.get("last"))

    def goal_ok(out):   # in exactly one recording (alone or merged across less than --silence), both words heard
        return sum(1 for o in out if o["kind"] in ("alone", "merged") and o.get("first") and o.get("last"))

    def onsets(files, out):
        """Energy onset of each file holding a phrase (its first phrase's), and the aligned lead."""
        e = [f["onset"] for f in files if f["phrases"]]
        lead = []
        for f in files:
            if f["phrases"]:
                p = truth[min(f["phrases"], key=lambda i: truth[i]["start"])]
                lead.append(p["start"] - f["start"])
        return e, lead

    def cause(files):
        kinds = {}
        for f in files:
            k = ", ".join(sorted(set(f["events"]))) or "room noise only"
            kinds[k] = kinds.get(k, 0) + 1
        return "; ".join(f"{v}× {k}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])) or "–"

    a, b, end = marks["a"], marks["b"], marks["end"]
    wall = b["t"] - a["t"]
    recd_pct = 100 * (b["cpu"] - a["cpu"]) / wall
    sox_pct = 100 * (b["sox"] - a["sox"]) / wall
    whole = end["t"] - a["t"]
    recd_pct_all = 100 * (end["cpu"] - a["cpu"]) / whole
    sox_pct_all = 100 * (end["sox"] - a["sox"]) / whole
    floor_pct = 100 * (b["floor"] - a["floor"]) / wall
    floor_pct_all = 100 * (end["floor"] - a["floor"]) / whole
    busy_pct = 100 * (b["busy"][0] - a["busy"][0]) / max(1, b["busy"][1] - a["busy"][1]) * os.cpu_count()
    busy_pct_all = 100 * (end["busy"][0] - a["busy"][0]) / max(1, end["busy"][1] - a["busy"][1]) * os.cpu_count()

    def per_proc(s1, s2):
        rows = []
        names = {pid: name for pid, name, _, _ in s1["procs"]}
        names.update({pid: name for pid, name, _, _ in s2["procs"]})
        for pid in names:
            c1 = next((c for p, _, _, c in s1["procs"] if p == pid), None)
            c2 = next((c for p, _, _, c in s2["procs"] if p == pid), None)
            r1 = next((r for p, _, r, _ in s1["procs"] if p == pid), None)
            r2 = next((r for p, _, r, _ in s2["procs"] if p == pid), None)
            rows.append((pid, names[pid], c1, c2, r1, r2))
        return rows

    rss_a = sum(r for _, _, r, _ in a["procs"])
    rss_end = sum(r for _, _, r, _ in end["procs"])
    rss_series = [sum(r for _, _, r, _ in s["procs"]) for s in samples]
    n = n_phrases
    e_recd, lead_recd = onsets(recd_files, recd_out)
    e_sox, lead_sox = onsets(peer_files, peer_out)
    quiet = [p for p in truth if p["quiet"]]
    mode = "quick mode (--quick)" if args.quick else "full run"
    lines = [TITLE, "",
             f"Written by `bench/listen.py` ({mode}, seed {args.seed}) on {date.strftime('%Y-%m-%d %H:%M')} UTC — "
             f"{os.cpu_count()} CPUs; recd: release build ({build_note}); detector: **{detector}**"
             + (f" ({detector_note})" if detector_note else "") + f"; Whisper base at normal priority. Load average "
             f"{' '.join(load_before)} before, {' '.join(load_after)} after; the machine (all processes) was "
             f"{busy_pct:.0f} % busy (of {100 * os.cpu_count()} %) during the CPU window, {busy_pct_all:.0f} % over the noise.",
             "",
             f"**How.** A private PulseAudio server with a mono 48 kHz null sink `mic`; paplay (`--latency-msec={PLAY_LATENCY_MS}`) plays "
             f"one continuous file into it in real time; recd (`--capture-device {DEVICE} --transcriber .build/transcribe "
             f"--transcribe-priority normal`, armed by `recctl listen start`: silence {settings['silence']:g} s, pre-roll "
             f"{settings['preRoll']:g} s, min {settings['min']:g} s, {settings['format']}) and the peer, sox's silence effect "
             f"(`sox -t alsa -r 48000 -c 1 {DEVICE} -b 16 out.wav {' '.join(SOX_EFFECT)}`: a file from the first 0.1 s "
             "above -45 dBFS until 2 s below it, as Linux's audio-recorder and fmedia `--start-dblevel` do), capture the "
             "same sound at the same time; paplay and the server run at a real-time priority (`chrt -f`) so "
             "that a busy machine does not starve them (an underrun puts silence into what the microphone delivers), and "
             "arecord keeps what the microphone delivered as a check: the set's phrases, music and slams are found in it "
             f"with {1000 * (drift or 0):.0f} ms of difference between their places (noise: {1000 * (drift2 or 0):.0f} ms)"
             + ("" if (drift or 0) < 0.01 and (drift2 or 0) < 0.01 else
                " (**the playback glitched**: silence was put into the sound; the figures below are doubtful)") + ". Each file is placed in the set by cross-correlation, so the script knows which "
             "phrases it holds and where it starts. sox's files are imported into the same recd (`recctl import`) and "
             "transcribed by the same Whisper.",
             "",
             f"**The hidden set** ({set_seconds:.0f} s, built by the script from the seed): {n} phrases spoken by espeak-ng "
             f"(voices {', '.join(sorted(set(p['voice'] for p in truth)))}; {min(p['wpm'] for p in truth)}–{max(p['wpm'] for p in truth)} "
             f"words a minute; at {SPEECH_DB:g} dBFS RMS, {len(quiet)} of them 18 dB quieter), each with its own first and last "
             f"word, separated by {min(p['gap_after'] for p in truth[:-1]):.1f}–{max(p['gap_after'] for p in truth[:-1]):.1f} s; "
             f"pink room noise at {ROOM_DB:g} dBFS RMS under all of it (2 s before the first phrase); "
             f"{sum(1 for e in set_events if e['kind'] == 'music')} music passages (sox synth chords, 3–5 s, -30 to -24 dBFS RMS) and "
             f"{sum(1 for e in set_events if e['kind'] == 'door slam')} door slams (150–250 ms of brown noise, peak 0.8–0.95) "
             "in pauses.",
             "",
             "### Every phrase in one recording, none cut",
             "",
             "| | recd (listen) | sox silence (peer) | control: each phrase cut from the set (±1 s), imported |",
             "|---|---:|---:|---:|",
             f"| files made | {len(recd_files)} (kept {status['utterances']}, dropped as too short {status['dropped']}) | {len(peer_files)} |",
             f"| **phrases in exactly one file, first and last words in its transcript** (goal: all) | **{goal_ok(recd_out)} / {n}** | {goal_ok(peer_out)} / {n} | {sum(1 for c in control if c['first'] and c['last'])} / {n} |",
             f"| phrases alone in one file | {count(recd_out, 'alone')} | {count(peer_out, 'alone')} |",
             f"| merged with a neighbour closer than --silence ({silence:g} s; allowed) | {count(recd_out, 'merged')} | {count(peer_out, 'merged')} |",
             f"| merged with a neighbour {silence:g} s or more away | {count(recd_out, 'merged-long')} | {count(peer_out, 'merged-long')} |",
             f"| split over two files or more | {count(recd_out, 'split')} | {count(peer_out, 'split')} |",
             f"| missed (in no file) | {count(recd_out, 'missed')} | {count(peer_out, 'missed')} |",
             f"| phrases whose sound is whole in their file (by alignment) | {sum(1 for o in recd_out if o.get('whole'))} | {sum(1 for o in peer_out if o.get('whole'))} |",
             f"| first word in the transcript | {sum(1 for o in recd_out if o.get('first'))} | {sum(1 for o in peer_out if o.get('first'))} | {sum(1 for c in control if c['first'])} |",
             f"| last word in the transcript | {sum(1 for o in recd_out if o.get('last'))} | {sum(1 for o in peer_out if o.get('last'))} | {sum(1 for c in control if c['last'])} |",
             f"| quiet phrases (-18 dB) meeting the goal | {sum(1 for o in recd_out if truth[o['i']]['quiet'] and o['kind'] in ('alone', 'merged') and o.get('first') and o.get('last'))} / {len(quiet)} "
             f"| {sum(1 for o in peer_out if truth[o['i']]['quiet'] and o['kind'] in ('alone', 'merged') and o.get('first') and o.get('last'))} / {len(quiet)} |",
             f"| files holding no phrase (what they hold) | {sum(1 for f in recd_files if not f['phrases'])} ({cause([f for f in recd_files if not f['phrases']])}) "
             f"| {sum(1 for f in peer_files if not f['phrases'])} ({cause([f for f in peer_files if not f['phrases']])}) |",
             "",
             "### The onset kept",
             "",
             f"Per file holding a phrase: seconds from the file's start to its first 10 ms louder than {ONSET_DB:g} dBFS (the "
             "room noise is at -60), and, by alignment, to the first sample of its first phrase (negative: the file starts "
             f"after the phrase did, its first word clipped). Median (min–max). Goal: no later than the pre-roll before the "
             f"first word (≈ {settings['preRoll']:g} s; ≥ 0.8 s).",
             "",
             "| | recd (listen) | sox silence (peer) |",
             "|---|---:|---:|",
             f"| file start → first sound above {ONSET_DB:g} dBFS | {med_range(e_recd)} | {med_range(e_sox)} |",
             f"| file start → the phrase's first sample (aligned) | {med_range(lead_recd)} | {med_range(lead_sox)} |",
             f"| files starting less than 0.8 s before their phrase | {sum(1 for v in lead_recd if v < 0.8)} of {len(lead_recd)} | {sum(1 for v in lead_sox if v < 0.8)} of {len(lead_sox)} |",
             f"| speech detected, after its first sound (recd's journal: a take \"from X s back\", less the pre-roll) | {med_range([v - settings['preRoll'] for v in backs])} | |",
             "",
             "The control column is Whisper's ceiling on the same sound: a word it misses there is the transcriber's "
             "miss, not a cut.",
             "",
             "<details><summary>Each phrase</summary>",
             "",
             "| # | phrase | voice, wpm | level | pause after | recd: file, lead, words | sox: file, lead, words | control: words |",
             "|---|---|---|---|---|---|---|---|"]
    def mark(first, last):
        return "✓✓" if first and last else f"{'✓' if first else '✗'}{'✓' if last else '✗'}"
    for p, ro, so, co in zip(truth, recd_out, peer_out, control):
        def cell(o):
            if o["kind"] == "missed":
                return "missed"
            w = "" if "first" not in o else " " + mark(o["first"], o["last"])
            lead = f", {o['lead']:+.2f} s" if "lead" in o else ""
            return f"{'+'.join(o['files'])} ({o['kind']}){lead}{w}"
        gap = f"{p['gap_after']:.1f} s {p['gap_kind']}" if "gap_after" in p else "(end)"
        lines.append(f"| {p['i'] + 1} | {p['text']} | {p['voice']}, {p['wpm']} | {p['level']:g} dBFS | {gap} | {cell(ro)} | {cell(so)} | {mark(co['first'], co['last'])} |")
    lines += ["", "✓✓: first and last words in the file's transcript (✗ where not). Lead: file start → the phrase's first sample.",
              "", "Transcripts (recd's files; the control's):", ""]
    for f in recd_files:
        lines.append(f"- {f['name']} ({', '.join(str(i + 1) for i in f['phrases']) or 'no phrase'}): {f['text']!r}")
    for p, c in zip(truth, control):
        lines.append(f"- control {p['i'] + 1}: {c['text']!r}")
    lines += [
              "", "</details>", ""]

    # false recordings
    kinds = {}
    for e in noise_events:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    names = {"music": ("music passage", "music passages"), "fan": ("fan", "fans"), "door slam": ("door slam", "door slams"),
             "two door slams": ("door opened and shut (two slams)", "doors opened and shut (two slams)")}
    noise_sound = ", ".join(f"{v} {names[k][v > 1]}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
    lines += ["### False recordings on sound without speech", "",
              f"{noise_seconds / 60:.1f} minutes: room noise throughout ({window[1] - window[0]:.0f} s of it alone first, "
              f"the CPU window below), then {noise_sound} (music 3–10 s at -30 to -22 dBFS RMS; fan: rumble and a 100 Hz hum "
              "at -44 to -38 dBFS RMS, 20–45 s). A fresh recd, armed with the same defaults; sox the same.", "",
              "| | recd (listen) | sox silence (peer) |", "|---|---:|---:|",
              f"| **files made** (goal ≤ 1) | **{len(noise_recd_files)}** (kept {status2['utterances']}, dropped as too short {status2['dropped']}) | {len(noise_sox)} |",
              f"| seconds recorded | {sum(f['seconds'] for f in noise_recd_files):.1f} | {sum(f['seconds'] for f in noise_peer_files):.1f} |",
              f"| what they hold | {cause(noise_recd_files)} | {cause(noise_peer_files[:placed])}{peer_placed_note} |", ""]

    # CPU and memory
    lines += ["### CPU and memory while armed in silence", "",
              f"CPU over {wall:.0f} s of room noise alone (armed, nothing said), and over the whole noise "
              f"({whole / 60:.1f} min, music, slams and fan included): recd's utime+stime with its children's "
              "(`recd_cpu_seconds`: media workers, the voice detector, reaped ones included), as % of one core; sox's "
              "own. RSS: VmRSS of recd and each child at the start of the window and at the end of the noise. "
              f"The microphone delivers its sound in blocks of {PLAY_LATENCY_MS} ms (paplay's latency), recd's own period: "
              "every capturing process here wakes that often, and reading through ALSA's pulse plugin is most of the floor's "
              "cost (with 10 ms blocks recd and the floor each took about 1 % more in trial runs; with 100 ms, less).", "",
              "| | recd + children | sox silence (peer) | floor: arecord alone (the same device, recd's period and buffer, to a WAV) |", "|---|---:|---:|---:|",
              f"| **CPU, room noise alone** (goal ≤ 2 % of one core) | **{recd_pct:.2f} %** | {sox_pct:.2f} % | {floor_pct:.2f} % |",
              f"| CPU, the whole noise | {recd_pct_all:.2f} % | {sox_pct_all:.2f} % | {floor_pct_all:.2f} % |",
              f"| RSS at the start → end ({whole / 60:.1f} min later) | {rss_a / 1024:.1f} → {rss_end / 1024:.1f} MB "
              f"(min {min(rss_series) / 1024:.1f}, max {max(rss_series) / 1024:.1f} over {len(samples)} samples) | "
              f"{a['sox_rss'] / 1024:.1f} → {end['sox_rss'] / 1024:.1f} MB | |", "",
              "| process | CPU, room noise alone | CPU, whole noise | RSS start → end |", "|---|---:|---:|---:|"]
    for pid, name, c1, c2, r1, r2 in per_proc(a, end):
        cb = next((c for p, _, _, c in b["procs"] if p == pid), None)
        w_ = f"{100 * (cb - c1) / wall:.2f} %" if c1 is not None and cb is not None else "–"
        w2 = f"{100 * (c2 - c1) / whole:.2f} %" if c1 is not None and c2 is not None else "–"
        r_ = f"{(r1 or 0) / 1024:.1f} → {(r2 or 0) / 1024:.1f} MB" if r1 is not None and r2 is not None else \
             (f"{r1 / 1024:.1f} MB → gone" if r1 is not None else f"new → {r2 / 1024:.1f} MB")
        lines.append(f"| {name} (pid {pid}) | {w_} | {w2} | {r_} |")
    lines += ["", "Goals (issue 49): every phrase in exactly one recording (or merged with a neighbour closer than "
              "`--silence`), none cut; false recordings on 10 minutes of noise ≤ 1; CPU armed in silence ≤ 2 % of one core "
              "(recd, workers and detector), memory flat over an hour; the onset kept (a recording starts no later than "
              "`pre-roll` before the first word).",
              f"Met here: phrases {'yes' if goal_ok(recd_out) == n else 'NO'} ({goal_ok(recd_out)}/{n}); false recordings "
              f"{'yes' if len(noise_recd_files) <= 1 else 'NO'} ({len(noise_recd_files)} in {noise_seconds / 60:.1f} min); CPU "
              f"{'yes' if recd_pct <= 2 else 'NO'} ({recd_pct:.2f} %); memory {rss_a / 1024:.1f} → {rss_end / 1024:.1f} MB over "
              f"{whole / 60:.1f} min (an hour not run); onset "
              f"{'yes' if lead_recd and min(lead_recd) >= 0.8 else 'NO'} (the earliest file starts {min(lead_recd) if lead_recd else float('nan'):.2f} s "
              "before its phrase's first sample; the pre-roll is counted back from where the detector heard speech begin, "
              "which for a quiet first sound is a little after it).", ""]
    section = "\n".join(lines) + "\n"
    print(section)
    json.dump(dict(recd=recd_files, sox=peer_files, recd_outcome=recd_out, sox_outcome=peer_out, noise_recd=noise_recd_files,
                   noise_sox=noise_peer_files[:placed], samples=samples), open(os.path.join(work, "results.json"), "w"), indent=1, default=str)
    if not args.no_write and not os.environ.get("BENCH_NO_WRITE"):
        log("wrote " + write_section(REPO, TITLE, section))


if __name__ == "__main__":
    main()
