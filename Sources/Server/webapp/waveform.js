// Draws audiowaveform v2 data on a canvas, the part played in the accent.

import { api } from './api.js';

export function drawWaveform(canvas, wave, progress = 0, head = false) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 300, height = canvas.clientHeight || 72;
  canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
  const g = canvas.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const style = getComputedStyle(document.documentElement), color = (v) => style.getPropertyValue(v);
  const played = color('--accent'), rest = color('--edge');   // 3:1 on white
  if (!wave || !wave.length) {
    g.fillStyle = rest; g.fillRect(0, height / 2 - 1, width, 2);
    canvas.dataset.drawn = '0';
    return;
  }
  const full = wave.bits === 8 ? 128 : 32768, step = wave.channels * 2, mid = height / 2;
  const bar = width / wave.length, px = 1 / ratio, gap = bar >= 3 ? 1 : 0;
  for (let p = 0; p < wave.length; p++) {
    let peak = 0;
    for (let c = 0; c < wave.channels; c++) {
      peak = Math.max(peak, Math.abs(wave.data[p * step + c * 2]), Math.abs(wave.data[p * step + c * 2 + 1]));
    }
    const hgt = Math.max(1, (peak / full) * (height - 4));
    g.fillStyle = p / wave.length < progress ? played : rest;
    g.fillRect(p * bar, mid - hgt / 2, Math.max(px, bar - gap), hgt);
  }
  // The position: a dark line edged in white, 3:1 beside any bar.
  const x = Math.min(Math.round(progress * width), width - 3);
  if (head) { g.fillStyle = '#fff'; g.fillRect(x - 1, 0, 4, height); g.fillStyle = color('--ink'); g.fillRect(x, 0, 2, height); }
  canvas.dataset.points = wave.length;
  canvas.dataset.drawn = Math.round(wave.length * bar);
}

/// As many points as the canvas has pixels, asked again when that changes.
export function fitWaveform(canvas, id, got) {
  let asked = 0, timer = null;
  const ask = () => {
    const pixels = Math.round(canvas.clientWidth * (window.devicePixelRatio || 1));
    if (!pixels || pixels === asked) return;
    asked = pixels;
    api.waveform(id, pixels).then((w) => { if (asked === pixels) got(w); }).catch(() => got(null));
  };
  const observer = new ResizeObserver(() => { clearTimeout(timer); timer = setTimeout(ask, 120); });
  try { observer.observe(canvas, { box: 'device-pixel-content-box' }); } catch { observer.observe(canvas); }
  ask();
  return () => { clearTimeout(timer); observer.disconnect(); };
}

export class LiveTrace {
  constructor(canvas, size = 120) { this.canvas = canvas; this.levels = new Array(size).fill(0); }
  push(peakDb) {
    this.levels.push(Math.max(0, Math.min(1, (peakDb + 60) / 60)));
    this.levels.shift();
    const data = [];
    for (const l of this.levels) data.push(-l * 127, l * 127);
    drawWaveform(this.canvas, { bits: 8, channels: 1, length: this.levels.length, data }, 1);
  }
}
