// Playback (seed 5.4.1, 5.4.2), counted once (on dismiss or at the end); or on recd's speaker.

import { api } from './api.js';
import { h, duration, icon, toast, onKey, fill, quiet, deco } from './ui.js';
import { drawWaveform, fitWaveform } from './waveform.js';
import { transcriptPanel } from './transcript.js';
import { markerPanel } from './markers.js';
import { trimPanel } from './trim.js';
import { enhancePanel } from './enhance.js';

let current = null;
const kept = (k, v) => { try { return v === undefined ? localStorage.getItem(k) : localStorage.setItem(k, v); } catch { return null; } };

export function closePlayer() { current?.close(); }

export function markersChanged(id) {
  if (current && (!id || id.toLowerCase() === current.recording.id.toLowerCase())) { current.marks.load(); current.enh?.load(); }
}

export async function openPlayer(recording, { onSpeaker = false, onCounted = () => {}, at = 0 } = {}) {
  closePlayer();
  const sheet = document.getElementById('player');
  const isVideo = recording.type === 'video';
  const counts = recording.state === 'ready';   // (not a take's preview)
  const media = h(isVideo ? 'video' : 'audio', {
    src: api.media(recording), preload: 'auto', poster: isVideo && api.poster(recording.id), controls: isVideo, playsinline: true, 'aria-label': recording.title,
  });
  const canvas = deco('canvas', 'wave');
  const time = h('div', { class: 'time', 'aria-live': 'off' }, `0:00 / ${duration(recording.duration)}`);
  const pause = h('button', { 'aria-label': 'Pause', 'data-action': 'pause', onclick: () => toggle() }, '⏸');
  const state = current = { recording, media, counts, speaker: onSpeaker };
  const opener = document.activeElement;
  const hint = h('p', { class: 'hint', 'data-count-hint': '' },
    counts ? 'Counts as a play when you close it or it ends.' : 'Preview of a take that is not saved: not counted.');

  const count = async () => {
    if (!state.counts || state.counted || cut?.on()) return;   // trimming: not listening
    state.counted = true;
    try { onCounted(await api.played(recording.id)); hint.textContent = 'Counted as a play ✓'; } catch (e) { toast(e); }
  };
  state.close = () => shut(state, sheet, opener, count);
  const position = () => (state.speaker ? state.speakerPosition ?? 0 : media.currentTime);
  const length = () => recording.duration || media.duration || 0;
  const paused = () => (state.speaker ? state.speakerPaused : media.paused);
  const render = () => {
    const p = position(), n = length();
    time.textContent = `${duration(p)} / ${duration(n)}`;
    const v = { max: Math.round(n), now: Math.round(Math.min(p, n)), text: `${duration(p)} of ${duration(n)}` };
    for (const k in v) scrub.setAttribute('aria-value' + k, v[k]);
    if (!isVideo) drawWaveform(canvas, state.wave, n ? p / n : 0, true);
    state.transcript?.mark(p);
    const q = paused();
    pause.textContent = q ? '▶' : '⏸';
    pause.setAttribute('aria-label', q ? 'Play' : 'Pause');
  };
  const seekTo = async (t) => {
    t = Math.max(0, Math.min(length(), t));
    if (state.speaker) await api.transport('seek', { to: t }); else media.currentTime = t;
    render();
  };
  const skip = (by) => seekTo(position() + by);
  const by = (s, name, text) => h('button', { 'aria-label': `${name} 15 seconds`, 'data-action': name.toLowerCase(), onclick: () => skip(s) }, text + ' 15s');
  const playFrom = async (t) => { await seekTo(t); if (paused()) await toggle().catch(() => {}); };
  const toggle = async () => {
    if (state.speaker) {
      const s = await api.transport(state.speakerPaused ? 'resume' : 'pause');
      state.speakerPaused = s.playback?.state === 'paused';
    } else if (media.paused) await media.play(); else media.pause();
    render();
  };
  const marks = state.marks = markerPanel(recording.id, { seek: (t) => seekTo(t).catch(() => {}), length,
    now: () => (state.speaker ? {} : { time: Math.floor(Math.min(media.currentTime, length()) * 1000) / 1000 }) });
  state.unkey = onKey('m', marks.mark);
  media.addEventListener('loadedmetadata', marks.draw);   // when recd had no duration

  const silence = skipSilence(state), speed = speedControl(state);
  const frame = () => { silence.jump(); cancelAnimationFrame(state.frame); if (!media.paused) state.frame = requestAnimationFrame(frame); };
  media.addEventListener('playing', frame);

  // (not a video, a take's preview or recd's speaker)
  const [cut, enh] = isVideo || onSpeaker || !counts ? []
    : [trimPanel(recording, media, length, (r) => { state.counts = false; openPlayer(r, { onCounted }); }), enhancePanel(recording, media)];
  state.enh = enh;

  const fromPointer = (e) => { const r = scrub.getBoundingClientRect(); return ((e.clientX - r.left) / r.width) * length(); };
  const scrub = h('div', { class: 'scrub', role: 'slider', tabindex: '0', 'aria-label': 'Position', 'aria-valuemin': '0',
    onpointerdown: (e) => { scrub.setPointerCapture(e.pointerId); seekTo(fromPointer(e)); },
    onpointermove: (e) => { if (e.buttons) seekTo(fromPointer(e)); },
    onkeydown: (e) => { const by = { ArrowLeft: -5, ArrowRight: 5 }[e.key]; if (by) { skip(by); e.preventDefault(); } } }, canvas);

  media.addEventListener('timeupdate', () => { silence.jump(); render(); });
  if (counts) state.transcript = transcriptPanel(recording, (t) => playFrom(t).catch(() => {}));
  media.addEventListener('ended', async () => { render(); await count(); });
  fill(sheet,
    h('div', { class: 'head' },
      h('strong', {}, `${icon(recording)} ${recording.title}`),
      h('a', { class: 'quiet', href: api.download(recording), download: true, 'data-action': 'download',
               'aria-label': `Download ${recording.title}` }, '⬇'),
      enh?.head,
      navigator.canShare?.({ files: [new File([], 'a.m4a', { type: isVideo ? 'video/mp4' : 'audio/mp4' })] })
        && quiet(`Share ${recording.title}`, { 'data-action': 'share', title: 'Share', onclick: shareAction(recording) }, '⤴'),
      cut?.toggle,
      quiet('Close player', { 'data-action': 'close', onclick: state.close }, '✕')),
    isVideo ? media : h('div', { class: 'wave-box' }, scrub, marks.ticks, cut?.box, media),
    cut?.el,
    h('div', { class: 'time-row' }, marks.button, silence.button, silence.saves, time),
    h('div', { class: 'controls' }, by(-15, 'Back', '⏮'), pause, by(15, 'Forward', '⏭'), speed.button),
    enh?.el,
    marks.el,
    onSpeaker && h('p', { class: 'speaker-note', 'data-speaker-note': '' }, "🔈 Playing on recd's speaker (the computer recd runs on), not in this browser."),
    state.transcript?.el,
    hint);
  sheet.hidden = false;
  if (!isVideo) state.unfit = fitWaveform(canvas, recording.id, (w) => { state.wave = w; render(); });
  if (onSpeaker) {
    const reply = await api.playOnSpeaker(recording.id, at, silence.on(), speed.value());
    state.speakerPosition = at;
    media.removeAttribute('src');
    followSpeaker(state, reply.playback.session, render, onCounted);
  } else {
    if (at > 0) {
      if (media.readyState >= 1) media.currentTime = at;
      else media.addEventListener('loadedmetadata', () => { media.currentTime = at; }, { once: true });
    }
    try { await media.play(); } catch { /* autoplay refused */ }
  }
  render();
  pause.focus();
}

/// On closing, the focus back to what opened it, its row, or the screen.
async function shut(state, sheet, opener, count) {
  if (current !== state) return;
  current = null;
  clearInterval(state.timer);
  state.unfit?.(); state.transcript?.close(); state.marks.close(); state.unkey();
  const { media, speaker } = state, heard = !speaker && media.currentTime > 0;
  media.pause(); media.removeAttribute('src'); media.load();
  if (speaker) { try { await api.transport('stop'); } catch { /* it may have ended */ } }
  const inSheet = sheet.contains(document.activeElement);
  sheet.hidden = true; sheet.replaceChildren();
  if (inSheet || document.activeElement === document.body) {
    (opener?.isConnected && opener !== document.body && !sheet.contains(opener) ? opener
      : document.querySelector(`li[data-id="${CSS.escape(state.recording.id)}"] .row-main`) ?? document.getElementById('view')).focus();
  }
  if (heard) await count();
}

/// Skip Silence (issue 47): recd's pauses jumped over at each timeupdate and frame.
function skipSilence(state) {
  let skipping = kept('recd-skip-silence') === '1', asked = null, pauses = [];
  const saves = h('span', { class: 'hint', 'data-saves': '', 'aria-live': 'polite' });
  const button = h('button', { 'data-action': 'skip-silence', onclick: () => set(!skipping, true) }, 'Skip silence');
  const set = async (on, pressed) => {
    skipping = on;
    button.setAttribute('aria-pressed', on);
    kept('recd-skip-silence', on ? 1 : 0);
    if (pressed && state.speaker) toast("On recd's speaker: from the next play");
    saves.textContent = '';
    asked ??= on ? api.silences(state.recording.id).then((r) => { pauses = r.silences; return r.skippable; }, () => null) : null;
    const n = await asked;
    if (skipping && n !== null) saves.textContent = n ? `saves ${n < 60 ? n.toFixed(1) + ' s' : duration(n)}` : 'no pauses to skip';
  };
  set(skipping);
  const jump = () => {
    const { media } = state, t = media.currentTime, p = skipping && !state.speaker && pauses.find((x) => t >= x.start && t < x.end);
    if (p) media.currentTime = p.end;
  };
  return { button, saves, jump, on: () => skipping };
}

/// Speed (issue 47), kept: the <audio>'s (pitch kept), or recd's.
function speedControl(state) {
  const { media } = state, speeds = [1, 1.25, 1.5, 2, 0.75];
  let speed = +kept('recd-speed') || 1;
  const button = h('button', { 'data-action': 'speed', onclick: () => set(speeds[(speeds.indexOf(speed) + 1) % 5], true) });
  const set = (s, pressed) => {
    speed = speeds.includes(s) ? s : 1;
    button.textContent = `${speed}×`; button.setAttribute('aria-label', `Speed ${speed}×`);
    media.defaultPlaybackRate = media.playbackRate = speed; media.preservesPitch = true;
    kept('recd-speed', speed);
    if (pressed && state.speaker) api.transport('speed', { speed }).catch(toast);
  };
  set(speed);
  return { button, value: () => speed };
}

function shareAction(recording) {
  let file = null;
  return async () => {
    try {
      file ??= await fetch(api.download(recording)).then(async (res) => {
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const b = await res.blob();
        return new File([b], decodeURIComponent(/filename\*=UTF-8''([^;]+)/.exec(res.headers.get('content-disposition'))?.[1] ?? 'recording'), { type: b.type });
      });
      await navigator.share({ files: [file], title: recording.title });
    } catch (e) { if (e.name !== 'AbortError') toast(e.name === 'NotAllowedError' ? 'Ready: press Share again' : e); }
  };
}

function followSpeaker(state, session, render, onCounted) {
  state.timer = setInterval(async () => {
    const p = (await api.playback().catch(() => null))?.playback;
    if (!p || p.session !== session) {   // ended: recd counted it (if saved)
      clearInterval(state.timer); state.speaker = false; onCounted(null);
      return state.close();
    }
    state.speakerPosition = p.position; state.speakerPaused = p.state === 'paused';
    render();
  }, 250);
}
