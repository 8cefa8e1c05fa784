// Recording (seed 5.3): the mode choice, the timer and level, the fallbacks (the 503 offers), then the
// preview (5.3.3). It follows the take whoever drives it; a take in progress is where the app is.

import { api, events, isReachable, onReachability } from './api.js';
import { h, toast, confirmDialog, duration, metadataForm, screenTitle, onKey, modal } from './ui.js';
import { LiveTrace, drawWaveform, fitWaveform } from './waveform.js';
import { openPlayer, closePlayer } from './player.js';
import { markButton } from './markers.js';

const clock = (s) => `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(Math.floor(s % 60)).padStart(2, '0')}`;

/// Screen 5.3: resolves 'video', 'audio' or null.
export function chooseMode() {
  return new Promise((resolve) => {
    const pick = (v) => { dialog.close(); resolve(v); };
    const dialog = modal(() => resolve(null),
      h('h2', { id: 'dialog-title' }, 'Choose Recording Type'),
      h('div', { style: 'display: grid; gap: .6rem' },
        h('button', { class: 'primary', 'data-mode': 'video', onclick: () => pick('video') }, '🎥 RECORD VIDEO'),
        h('button', { class: 'primary', 'data-mode': 'audio', onclick: () => pick('audio') }, '🎙️ RECORD AUDIO'),
        h('button', { class: 'quiet', onclick: () => pick(null) }, 'Cancel')));
    dialog.querySelector('[data-mode=audio]').focus();
  });
}

export class RecordScreen {
  /// `onMode(mode)` names the screen; `onLive(bool)`: whether a take is recording.
  constructor(view, { onDone, onMode, onLive }) {
    this.view = view; this.onDone = onDone; this.onMode = onMode; this.onLive = onLive;
  }

  show(mode) {
    this.reset();
    this.mode = mode; this.audio = true;
    this.onMode(mode);
    const isVideo = mode === 'video';
    this.icon = h('div', { class: 'big-icon', 'aria-hidden': 'true' }, isVideo ? '🎥' : '🎙️');
    this.timer = h('div', { class: 'timer', role: 'timer', 'aria-live': 'off' }, '00:00');
    // Said at once: a start can take a second under load.
    this.starting = h('p', { class: 'starting', 'aria-live': 'polite' });
    this.canvas = h('canvas', { class: 'wave', 'aria-hidden': 'true' });
    this.meter = h('div', { class: 'meter', role: 'meter', 'aria-label': 'Input level', 'aria-valuemin': '-60', 'aria-valuemax': '0', 'aria-valuenow': '-60' });
    this.button = h('button', { class: 'rec-button', 'data-action': 'record', onclick: () => this.toggle() }, '● RECORD');
    this.pauseButton = h('button', { 'data-action': 'pause', hidden: true, onclick: () => this.togglePause() }, '❚❚ PAUSE');
    this.markButton = markButton(() => this.mark());
    this.markButton.hidden = true;
    this.cancel = h('button', { class: 'quiet', 'aria-label': 'Cancel', onclick: () => this.leave() }, '✕');
    // tabindex: the focus comes here when recd goes away under STOP or PAUSE
    this.error = h('div', { class: 'banner', role: 'alert', tabindex: '-1', hidden: true });
    this.view.replaceChildren(h('section', { class: 'record', 'aria-label': isVideo ? 'Video recording' : 'Audio recording' },
      h('div', { style: 'text-align: left' }, this.cancel), this.error, this.icon, this.canvas, this.meter, this.timer, this.starting,
      h('div', { class: 'actions', style: 'justify-content: center' }, this.pauseButton, this.button, this.markButton)));
    this.trace = new LiveTrace(this.canvas);
    this.trace.push(-160);
    this.button.focus();
  }

  /// Forgets a take this screen followed, so a new screen never answers for an old one.
  reset() {
    clearInterval(this.tick);
    this.unwatch?.(); this.unwatch = null;
    this.unkey?.(); this.unkey = null;
    this.unfit?.(); this.unfit = null;
    this.stream?.close();
    this.stream = null;
    if (this.recording) { this.recording = null; this.onLive(false); }
  }

  /// The take in progress (status' `active`) as this screen's own.
  attach(active) {
    this.show(active.recording.type === 'video' ? 'video' : 'audio');
    this.live(active.recording, active.elapsed ?? 0, active.paused);
  }

  async leave() {
    if (this.recording) return;   // the seed: ✕ is disabled while recording
    if (await confirmDialog('Discard and return to library?', null, 'Yes')) this.onDone();
  }

  async toggle() {
    if (this.button.getAttribute('aria-disabled') === 'true') return;   // on its way
    if (this.recording) await this.stop(); else await this.start();
  }

  /// RECORD/STOP while its request is on its way: aria-disabled, so the focus stays (not to <body>).
  busy(on) {
    if (on) this.button.setAttribute('aria-disabled', 'true'); else this.button.removeAttribute('aria-disabled');
  }

  async start() {
    this.error.hidden = true;
    this.busy(true);
    this.button.textContent = 'Starting…';
    this.starting.textContent = 'starting…';
    try {
      const reply = await api.start(this.mode, this.audio);
      this.live(reply.recording, 0, false);
    } catch (e) {
      // Another client started one meanwhile: show that one.
      const active = e.code === 'already_recording' ? (await api.status().catch(() => null))?.active : null;
      if (active) this.attach(active); else this.refused(e);
    } finally {
      this.starting.textContent = '';
      if (!this.recording) this.button.textContent = '● RECORD';
      this.busy(false);
      this.button.focus();
    }
  }

  /// The take is recording: STOP, PAUSE, the timer and the meters follow it.
  live(recording, elapsed, paused) {
    this.recording = recording;
    this.wentAway = false;   // set while recd is away during this take
    this.tick = setInterval(() => this.showTime(), 250);
    this.pauseButton.hidden = this.markButton.hidden = false;
    this.unkey = onKey('m', () => this.mark());
    this.cancel.disabled = true;
    this.button.textContent = '■ STOP';
    this.button.setAttribute('data-action', 'stop');
    // The time recorded: recd's at the start (or the last pause or resume), plus the time since.
    this.pauseState({ paused, elapsed });
    this.onLive(true);
    this.listen();
    // recd gone: the timer stands, STOP, PAUSE and Mark are disabled; what is left of the take is
    // known once recd is back (`sync`).
    this.unwatch = onReachability((up) => {
      if (!this.recording) return;
      this.timer.classList.toggle('stalled', !up);
      const focused = [this.button, this.pauseButton, this.markButton].includes(document.activeElement);
      this.button.disabled = this.pauseButton.disabled = this.markButton.disabled = !up;
      if (up) {
        this.error.hidden = true;
        if (focused || document.activeElement === this.error || document.activeElement === document.body) this.button.focus();
        this.sync(this.recording.id);   // at once, not at the stream's reconnection
        return;
      }
      this.wentAway = true;
      this.meterOff();
      this.icon.classList.remove('live');
      this.say(h('p', {}, h('strong', {}, 'recd stopped during the recording: nothing more is being recorded. '),
        'When it is back, this screen says what of the take was kept.'));
      if (focused) this.error.focus();
    });
  }

  /// The meter at rest: lanes kept (empty), so the controls below do not move.
  meterOff() {
    this.trace.push(-160);
    for (const l of this.meter.querySelectorAll('.level')) l.style.width = '0%';
    this.meter.dataset.peak = '-160';
    this.meter.setAttribute('aria-valuenow', '-60');
  }

  showTime() {
    if (!isReachable()) return;   // nothing is recorded while recd is away
    const t = this.base + (this.paused ? 0 : (performance.now() - this.since) / 1000);
    this.timer.replaceChildren(h('span', { class: this.paused ? 'paused-mark' : 'rec-mark', 'aria-hidden': 'true' }, this.paused ? '❚❚' : '⏺'),
      ' ' + clock(t));
  }

  /// A pause or resume, from this page or any other client.
  pauseState(p) {
    this.paused = p.paused; this.base = p.elapsed; this.since = performance.now();
    this.icon.classList.toggle('live', !p.paused);
    this.pauseButton.textContent = p.paused ? '● RESUME' : '❚❚ PAUSE';
    this.pauseButton.setAttribute('data-action', p.paused ? 'resume' : 'pause');
    this.pauseButton.setAttribute('aria-label', p.paused ? 'Resume recording' : 'Pause recording');
    if (p.paused) this.meterOff();
    this.showTime();
  }

  async togglePause() {
    this.pauseButton.disabled = true;
    try {
      this.pauseState(await (this.paused ? api.resume() : api.pause()));
    } catch (e) {
      toast(e.message);
    } finally {
      this.pauseButton.disabled = !isReachable();
      if (!this.pauseButton.disabled) this.pauseButton.focus();
    }
  }

  /// A marker on the take (POST with no time: recd marks the take's time so far).
  async mark() {
    try { toast(`Marked ${duration((await api.mark(this.recording.id, {})).time)}`); } catch (e) { toast(e.message); }
  }

  /// The seed's fallbacks (5.2) for the 503 offers, and other errors.
  refused(e) {
    const offer = (text, label, then) => this.say(h('p', {}, text), h('button', { class: 'primary', onclick: then }, label));
    if (e.code === 'device_unavailable' && e.offer === 'audio_only') {
      offer('Camera required for video recordings. Record audio-only instead.', '🎙️ RECORD AUDIO', () => { this.show('audio'); this.start(); });
    } else if (e.code === 'device_unavailable' && e.offer === 'video_only') {
      offer('Microphone required for recordings. You can still record video-only.', '🎥 RECORD VIDEO-ONLY', () => { this.audio = false; this.start(); });
    } else {
      const why = { device_unavailable: 'The microphone is not available: ', insufficient_storage: 'The disk is full: ' }[e.code] ?? '';
      offer(why + e.message, 'Try again', () => this.start());
    }
  }

  listen() {
    const id = this.recording.id;
    this.stream = events(['meter', 'recording.stopped', 'recording.paused', 'recording.resumed'], (e) => {
      if (e.data.recordingID !== id) return;
      if (e.type === 'recording.paused' || e.type === 'recording.resumed') {
        this.pauseState(e.data);
      } else if (e.type === 'meter' && e.data.source === 'recording') {
        if (this.paused) return;
        const peak = Math.max(...e.data.channels.map((c) => c.peak));
        this.trace.push(peak);
        this.meter.replaceChildren(...e.data.channels.map((c) => h('div', { class: 'lane' },
          h('div', { class: 'level', style: `width: ${Math.max(0, Math.min(100, ((c.peak + 60) / 60) * 100))}%` }))));
        this.meter.setAttribute('aria-valuenow', Math.round(Math.max(-60, peak)));
        this.meter.dataset.peak = String(peak);
      } else if (e.type === 'recording.stopped') {
        this.ended(e.data.recording, e.data.error);   // stopped elsewhere, or by itself
      }
    }, () => this.sync(id));
  }

  /// On each (re)connection of the stream: where is the take?
  async sync(id) {
    try {
      const active = (await api.status()).active;
      if (this.recording?.id !== id) return;
      if (active?.recording.id === id) {
        // elapsed is null while the take starts or stops: look again shortly.
        if (active.elapsed !== null) this.pauseState(active);
        else setTimeout(() => { if (this.recording?.id === id) this.sync(id); }, 500);
        return;
      }
      let after = null;
      try { after = await api.get(id); } catch (e) { if (e.status !== 404) throw e; }   // 404: no such take
      if (this.recording?.id !== id) return;
      if (!after && this.wentAway) { this.emptied(); return; }
      this.ended(after, null, this.wentAway);
    } catch { /* recd is not reachable: the screen says so */ }
  }

  async stop() {
    const id = this.recording.id;
    this.busy(true);
    try {
      const reply = await api.stop();
      this.ended(reply.recording);
    } catch (e) {
      if (e.code === 'not_recording') await this.sync(id);   // stopped elsewhere first
      else if (e.code !== 'unreachable') toast(e.message);   // the screen says so
    } finally {
      this.busy(false);
    }
  }

  /// recd came back without the take (no sound of it reached the disk).
  emptied() {
    this.show(this.mode);
    this.say(h('p', {}, h('strong', {}, 'Nothing was kept. '),
      'recd stopped before any sound of the recording reached the disk, so it removed the empty take when it started again.'));
  }

  /// The screen's banner, saying `children`.
  say(...children) { this.error.replaceChildren(...children); this.error.hidden = false; }

  /// The take stopped (here, elsewhere, or by itself): a pending take to its preview.
  ended(recording, why, quiet = false) {
    if (!this.recording) return;   // already followed (STOP and the event)
    this.pauseButton.hidden = this.markButton.hidden = true;
    this.reset();
    this.error.hidden = true;
    if (why) toast(`The recording ended by itself: ${why}`);
    else if (recording?.state !== 'pending' && !quiet) toast(recording ? 'Recording saved ✓' : 'Recording discarded');
    if (recording?.state === 'pending') this.preview(recording); else this.onDone();
  }

  /// Screen 5.3.3: preview, then save or discard. A blank title keeps the take's own.
  preview(r) {
    this.reset();
    screenTitle(r.type === 'video' ? 'Record video' : 'Record audio', 'Save the recording');
    const form = metadataForm({ optional: true, notes: r.notes, purpose: r.purpose });
    const error = h('p', { class: 'banner', role: 'alert', hidden: true });
    const discard = async () => {
      if (!await confirmDialog('Discard recording? This cannot be undone.', null, 'Discard')) return;
      closePlayer();
      try { await api.discard(r.id); toast('Recording discarded'); this.onDone(); } catch (e) { toast(e.message); }
    };
    const save = async () => {
      const m = form.read();
      try {
        await api.save(r.id, { title: m.title || undefined, notes: m.notes, purpose: m.purpose });
        closePlayer();
        toast('Recording saved ✓');
        this.onDone();
      } catch (e) { error.textContent = e.message; error.hidden = false; }
    };
    // A take recd salvaged after it stopped mid-take, with its length.
    const recovered = r.recovered
      ? h('p', { class: 'notice', role: 'status', 'data-recovered': '' },
        `Recovered after recd stopped during the recording: ${duration(r.duration)} of it was kept, not saved yet. Save it or discard it here.`)
      : null;
    const wave = r.type === 'video' ? null : h('canvas', { class: 'wave preview-wave', 'aria-hidden': 'true' });
    this.view.replaceChildren(h('section', { class: 'record', 'aria-label': 'Preview and save' },
      h('div', { class: 'actions', style: 'justify-content: space-between; margin-top: 0' },
        h('button', { class: 'quiet', 'aria-label': 'Discard', 'data-action': 'discard', onclick: discard }, '✕'),
        h('button', { class: 'primary', 'data-action': 'save', onclick: save }, 'SAVE')),
      recovered,
      h('div', { class: 'big-icon', 'aria-hidden': 'true' }, r.type === 'video' ? '🎥' : '🎙️'),
      wave,
      h('p', { class: 'hint take-title', 'data-take-title': '' }, r.title),
      h('button', { 'data-action': 'preview', onclick: () => openPlayer(r) }, `▶ Play  ${duration(r.duration)}`),
      error, form));
    // The take's waveform under the icon before it is played.
    if (wave) { drawWaveform(wave, null); this.unfit = fitWaveform(wave, r.id, (w) => drawWaveform(wave, w)); }
    this.view.querySelector('[data-action=preview]').focus();
  }
}
