// Recording (seed 5.3): mode, timer, level, the 503 offers, the preview (5.3.3).

import { api, events, isReachable, onReachability } from './api.js';
import { h, toast, confirmDialog, duration, metadataForm, screenTitle, onKey, modal, meter, busy, two, quiet, icon, cap, banner, deco } from './ui.js';
import { LiveTrace, drawWaveform, fitWaveform } from './waveform.js';
import { openPlayer, closePlayer } from './player.js';
import { markButton, markAt } from './markers.js';

const clock = (s) => `${two(Math.floor(s / 60))}:${two(Math.floor(s % 60))}`;

/// Screen 5.3: resolves 'video', 'audio', 'listen' or null.
export function chooseMode() {
  return new Promise((resolve) => {
    const pick = (v) => { dialog.close(); resolve(v); };
    const dialog = modal(() => resolve(null),
      h('h2', { id: 'dialog-title' }, 'Choose Recording Type'),
      h('div', { style: 'display: grid; gap: .6rem' },
        [['video', '🎥 RECORD VIDEO'], ['audio', '🎙️ RECORD AUDIO'], ['listen', '👂 LISTEN HANDS-FREE']]
          .map(([m, text]) => h('button', { class: 'primary', 'data-mode': m, onclick: () => pick(m) }, text)),
        quiet(null, { onclick: () => pick(null) }, 'Cancel')));
    dialog.querySelector('[data-mode=audio]').focus();
  });
}

export class RecordScreen {
  /// `onLive(bool)`: a take recording; `onBusy(active)`: another's.
  constructor(view, { onDone, onMode, onLive, onBusy }) { Object.assign(this, { view, onDone, onMode, onLive, onBusy }); }

  show(mode) {
    this.reset();
    this.onMode(this.mode = mode); this.audio = true;
    this.icon = deco('div', 'big-icon', icon({ type: mode }));
    this.timer = h('div', { class: 'timer', role: 'timer', 'aria-live': 'off' }, '00:00');
    this.starting = h('p', { class: 'starting', 'aria-live': 'polite' });
    this.canvas = deco('canvas', 'wave');
    this.meter = meter();
    this.button = h('button', { class: 'rec-button', 'data-action': 'record', onclick: () => this.toggle() }, '● RECORD');
    this.pauseButton = h('button', { hidden: true, onclick: () => this.togglePause() });
    (this.markButton = markButton(() => this.mark())).hidden = true;
    this.cancel = quiet('Cancel', { onclick: () => this.leave() }, '✕');
    this.error = banner('div', { tabindex: '-1' });
    this.view.replaceChildren(h('section', { class: 'record', 'aria-label': cap(mode) + ' recording' },
      h('div', { style: 'text-align: left' }, this.cancel), this.error, this.icon, this.canvas, this.meter, this.timer, this.starting,
      h('div', { class: 'actions', style: 'justify-content: center' }, this.pauseButton, this.button, this.markButton)));
    (this.trace = new LiveTrace(this.canvas)).push(-160);
    this.button.focus();
  }

  reset() {
    clearInterval(this.tick);
    this.unwatch?.(); this.unkey?.(); this.unfit?.(); this.stream?.close();
    this.unwatch = this.unkey = this.unfit = this.stream = null;
    if (this.recording) { this.recording = null; this.onLive(false); }
  }

  attach(active) {
    this.show(active.recording.type === 'video' ? 'video' : 'audio');
    this.live(active.recording, active.elapsed ?? 0, active.paused);
  }

  async leave() {
    if (this.recording) return;
    if (await confirmDialog('Discard and return to library?', null, 'Yes')) this.onDone();
  }

  toggle() { return busy(this.button, () => (this.recording ? this.stop() : this.start())); }

  async start() {
    this.error.hidden = true;
    this.button.textContent = 'Starting…';
    this.starting.textContent = 'starting…';
    try { this.live((await api.start(this.mode, this.audio)).recording, 0, false); } catch (e) {
      const active = e.code === 'already_recording' ? (await api.status().catch(() => null))?.active : null;
      if (active) this.onBusy(active); else this.refused(e);
    } finally {
      this.starting.textContent = '';
      if (!this.recording) this.button.textContent = '● RECORD';
      this.button.focus();
    }
  }

  live(recording, elapsed, paused) {
    this.recording = recording;
    this.wentAway = false;
    this.tick = setInterval(() => this.showTime(), 250);
    this.pauseButton.hidden = this.markButton.hidden = false;
    this.unkey = onKey('m', () => this.mark());
    this.cancel.disabled = true;
    this.button.textContent = '■ STOP';
    this.button.dataset.action = 'stop';
    // The time: recd's at the start (or last pause or resume) plus the time since.
    this.pauseState({ paused, elapsed });
    this.onLive(true);
    this.listen();
    // recd gone: the timer stands; what was kept is known once it is back.
    this.unwatch = onReachability((up) => {
      if (!this.recording) return;
      this.timer.classList.toggle('stalled', !up);
      const focused = [this.button, this.pauseButton, this.markButton].includes(document.activeElement);
      this.button.disabled = this.pauseButton.disabled = this.markButton.disabled = !up;
      if (up) {
        this.error.hidden = true;
        if (focused || document.activeElement === this.error || document.activeElement === document.body) this.button.focus();
        this.sync(this.recording.id);
        return;
      }
      this.wentAway = true;
      this.meterOff();
      this.icon.classList.remove('live');
      this.error.say(h('p', {}, h('strong', {}, 'recd stopped during the recording: nothing more is being recorded. '),
        'When it is back, this screen says what of the take was kept.'));
      if (focused) this.error.focus();
    });
  }

  meterOff() { this.trace.push(this.meter.set()); }

  showTime() {
    if (!isReachable()) return;   // nothing recorded while recd is away
    const t = this.base + (this.paused ? 0 : (performance.now() - this.since) / 1000);
    this.timer.replaceChildren(deco('span', this.paused ? 'paused-mark' : 'rec-mark', this.paused ? '❚❚' : '⏺'),
      ' ' + clock(t));
  }

  pauseState(p) {
    this.paused = p.paused; this.base = p.elapsed; this.since = performance.now();
    this.icon.classList.toggle('live', !p.paused);
    const b = this.pauseButton, a = b.dataset.action = p.paused ? 'resume' : 'pause';
    b.textContent = p.paused ? '● RESUME' : '❚❚ PAUSE';
    b.setAttribute('aria-label', cap(a) + ' recording');
    if (p.paused) this.meterOff();
    this.showTime();
  }

  async togglePause() {
    this.pauseButton.disabled = true;
    try { this.pauseState(await (this.paused ? api.resume() : api.pause())); } catch (e) { toast(e); }
    if (!(this.pauseButton.disabled = !isReachable())) this.pauseButton.focus();
  }

  mark() { markAt(this.recording.id, {}).catch(toast); }

  refused(e) {
    const offer = (text, label, then) => this.error.say(h('p', {}, text), h('button', { class: 'primary', onclick: () => { then?.(); this.toggle(); } }, label));
    const o = e.code === 'device_unavailable' && e.offer;
    if (o === 'audio_only') offer('Camera required for video recordings. Record audio-only instead.', '🎙️ RECORD AUDIO', () => this.show('audio'));
    else if (o === 'video_only') offer('Microphone required for recordings. You can still record video-only.', '🎥 RECORD VIDEO-ONLY', () => { this.audio = false; });
    else offer(({ device_unavailable: 'The microphone is not available: ', insufficient_storage: 'The disk is full: ' }[e.code] ?? '') + e.message, 'Try again');
  }

  listen() {
    const id = this.recording.id;
    this.stream = events(['meter', 'recording.stopped', 'recording.paused', 'recording.resumed'], (e) => {
      if (e.data.recordingID !== id) return;
      if (e.type === 'recording.stopped') this.ended(e.data.recording, e.data.error);
      else if (e.type !== 'meter') this.pauseState(e.data);
      else if (e.data.source === 'recording' && !this.paused) this.trace.push(this.meter.set(e.data.channels.map((c) => c.peak)));
    }, () => this.sync(id));
  }

  async sync(id) {
    try {
      const active = (await api.status()).active;
      if (this.recording?.id !== id) return;
      if (active?.recording.id === id) {
        // (elapsed is null while the take starts or stops)
        if (active.elapsed !== null) this.pauseState(active);
        else setTimeout(() => { if (this.recording?.id === id) this.sync(id); }, 500);
        return;
      }
      let after = null;
      try { after = await api.get(id); } catch (e) { if (e.status !== 404) throw e; }
      if (this.recording?.id !== id) return;
      if (!after && this.wentAway) { this.emptied(); return; }
      this.ended(after, null, this.wentAway);
    } catch { /* recd away: the screen says so */ }
  }

  async stop() {
    const id = this.recording.id;
    try { this.ended((await api.stop()).recording); } catch (e) {
      if (e.code === 'not_recording') await this.sync(id);   // stopped elsewhere first
      else if (e.code !== 'unreachable') toast(e);   // the screen says so
    }
  }

  emptied() {
    this.show(this.mode);
    this.error.say(h('p', {}, h('strong', {}, 'Nothing was kept. '),
      'recd stopped before any sound of the recording reached the disk, so it removed the empty take when it started again.'));
  }

  /// The take stopped (here, elsewhere, by itself).
  ended(recording, why, quiet = false) {
    if (!this.recording) return;   // (STOP and the event)
    this.pauseButton.hidden = this.markButton.hidden = true;
    this.reset();
    this.error.hidden = true;
    if (why) toast(`The recording ended by itself: ${why}`);
    else if (recording?.state !== 'pending' && !quiet) toast(recording ? 'Recording saved ✓' : 'Recording discarded');
    if (recording?.state === 'pending') this.preview(recording); else this.onDone();
  }

  /// Screen 5.3.3: preview, save or discard (a blank title keeps the take's own).
  preview(r) {
    this.reset();
    screenTitle('Record ' + r.type, 'Save the recording');
    const form = metadataForm({ optional: true, notes: r.notes, purpose: r.purpose });
    const error = banner();
    const discard = async () => {
      if (!await confirmDialog('Discard recording? This cannot be undone.', null, 'Discard')) return;
      closePlayer();
      try { await api.discard(r.id); toast('Recording discarded'); this.onDone(); } catch (e) { toast(e); }
    };
    const save = async () => {
      const m = form.read();
      try { await api.save(r.id, { ...m, title: m.title || undefined }); closePlayer(); toast('Recording saved ✓'); this.onDone(); } catch (e) { error.say(e.message); }
    };
    const wave = r.type === 'video' ? null : deco('canvas', 'wave preview-wave');
    this.view.replaceChildren(h('section', { class: 'record', 'aria-label': 'Preview and save' },
      h('div', { class: 'actions', style: 'justify-content: space-between; margin-top: 0' },
        quiet('Discard', { 'data-action': 'discard', onclick: discard }, '✕'),
        h('button', { class: 'primary', 'data-action': 'save', onclick: save }, 'SAVE')),
      r.recovered && h('p', { class: 'notice', role: 'status', 'data-recovered': '' },
        `Recovered after recd stopped during the recording: ${duration(r.duration)} of it was kept, not saved yet. Save it or discard it here.`),
      deco('div', 'big-icon', icon(r)),
      wave,
      h('p', { class: 'hint take-title', 'data-take-title': '' }, r.title),
      h('button', { 'data-action': 'preview', onclick: () => openPlayer(r) }, `▶ Play  ${duration(r.duration)}`),
      error, form));
    if (wave) { drawWaveform(wave, null); this.unfit = fitWaveform(wave, r.id, (w) => drawWaveform(wave, w)); }
    this.view.querySelector('[data-action=preview]').focus();
  }
}
