#!/usr/bin/env python3
"""Enhance's measurement (issue 47): speech under noise at 5 dB SNR, and STOI before and after.

  intelligibility.py make DIR     writes DIR/u<i>_{clean,pink,hum}.wav (48 kHz mono 16-bit) and
                                  prints their names as JSON
  intelligibility.py score JSON   JSON: [[clean.wav, a.m4a, b.m4a], ...]; prints [[STOI(a), STOI(b)], ...],
                                  each against its clean speech, aligned by cross-correlation

Speech is espeak-ng's (three voices and rates), 0.5 s of quiet before and after it, at -26 dBFS
active level; the SNR is over the speech's active part (20 ms frames within 40 dB of the loudest),
against the noise's power over the whole file. The noise is deterministic (numpy seeds): pink, and a
fan with mains hum (brownish noise in 60-2000 Hz, 50 Hz harmonics, a blade tone).
Runs with Debian's python3-numpy and python3-scipy and pystoi (scripts/install-deps.sh --test).
"""
import json, subprocess, sys, wave
import numpy as np
from pystoi import stoi

SR = 48000
SNR_DB = 5.0
ACTIVE_DBFS = -26.0
# Harvard sentences (IEEE 1969): voice, words per minute, text.
UTTERANCES = [
    ("en-us", 150, "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."),
    ("en-gb+f3", 140, "It's easy to tell the depth of a well. These days a chicken leg is a rare dish."),
    ("en-us+m3", 165, "Rice is often served in round bowls. The juice of lemons makes fine punch."),
]


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def active_power(x):
    n = int(0.02 * SR)
    e = np.mean(x[: len(x) // n * n].reshape(-1, n) ** 2, axis=1) + 1e-20
    return float(np.mean(e[e > e.max() * 1e-4]))


def noise(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "pink":
        spectrum = np.fft.rfft(rng.standard_normal(n))
        f = np.fft.rfftfreq(n, 1 / SR)
        f[0] = f[1]
        x = np.fft.irfft(spectrum / np.sqrt(f), n)
    else:
        from scipy.signal import butter, sosfilt
        b = sosfilt(butter(2, [60, 2000], "bandpass", fs=SR, output="sos"), np.cumsum(rng.standard_normal(n)))
        b /= np.std(b)
        t = np.arange(n) / SR
        hum = sum(a * np.sin(2 * np.pi * 50 * k * t + rng.uniform(0, 6.28))
                  for k, a in [(1, 0.6), (2, 0.9), (3, 0.5), (4, 0.3), (5, 0.2), (7, 0.1)])
        x = b + hum + 0.3 * np.sin(2 * np.pi * 180 * t) * (1 + 0.2 * np.sin(2 * np.pi * 3 * t))
    return x / np.sqrt(np.mean(x ** 2))


def write(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())


def decode(path):
    raw = run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-ac", "1", "-ar", str(SR), "-f", "s16le", "-"]).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768


def make(folder):
    names = []
    for i, (voice, rate, text) in enumerate(UTTERANCES):
        raw = f"{folder}/u{i}_espeak.wav"
        run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", raw, text])
        s = decode(raw)
        s = np.concatenate([np.zeros(SR // 2), s, np.zeros(SR // 2)])
        s *= 10 ** (ACTIVE_DBFS / 20) / np.sqrt(active_power(s))
        clean = f"{folder}/u{i}_clean.wav"
        write(clean, s)
        item = {"clean": clean}
        for k, kind in enumerate(["pink", "hum"]):
            n = noise(kind, len(s), seed=1000 * i + k) * np.sqrt(active_power(s) / 10 ** (SNR_DB / 10))
            item[kind] = f"{folder}/u{i}_{kind}.wav"
            write(item[kind], s + n)
        names.append(item)
    print(json.dumps(names))


def aligned(ref, x, maxlag=4800):
    """`x` moved onto `ref` (a lag of at most 100 ms), cut or padded to its length."""
    from scipy.signal import fftconvolve
    n = len(ref)
    padded = np.zeros(n)
    padded[: min(n, len(x))] = x[:n]
    c = fftconvolve(padded, ref[::-1], mode="full")[n - 1 - maxlag: n + maxlag]
    lag = int(np.argmax(c)) - maxlag
    y = np.zeros(n)
    part = x[lag: lag + n] if lag >= 0 else np.concatenate([np.zeros(-lag), x[: n + lag]])
    y[: len(part)] = part
    return y


def score(triples):
    out = []
    for clean, a, b in triples:
        ref = decode(clean)
        out.append([float(stoi(ref, aligned(ref, decode(f)), SR, extended=False)) for f in (a, b)])
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        score(json.loads(sys.argv[2]))
