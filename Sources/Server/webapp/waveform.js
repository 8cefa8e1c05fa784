// Draws audiowaveform v2 data (what GET /v1/recordings/{id}/waveform serves) on a canvas, with the
// part already played in the accent colour.

export function drawWaveform(canvas, wave, progress = 0) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 300, height = canvas.clientHeight || 72;
  canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
  const g = canvas.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const style = getComputedStyle(document.documentElement);
  const played = style.getPropertyValue('--accent').trim() || '#3557d6';
  const rest = style.getPropertyValue('--line').trim() || '#ccc';
  if (!wave || !wave.length) {
    g.fillStyle = rest; g.fillRect(0, height / 2 - 1, width, 2);
    return;
  }
  const full = wave.bits === 8 ? 128 : 32768, step = wave.channels * 2, mid = height / 2;
  const bar = Math.max(1, width / wave.length);
  for (let p = 0; p < wave.length; p++) {
    let peak = 0;
    for (let c = 0; c < wave.channels; c++) {
      peak = Math.max(peak, Math.abs(wave.data[p * step + c * 2]), Math.abs(wave.data[p * step + c * 2 + 1]));
    }
    const hgt = Math.max(1, (peak / full) * (height - 4));
    g.fillStyle = p / wave.length < progress ? played : rest;
    g.fillRect(p * bar, mid - hgt / 2, Math.max(1, bar - 1), hgt);
  }
}

/// A live level trace for the recording screen: the newest level on the right.
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
