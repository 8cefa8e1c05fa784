// Listen (issue 49): recd keeps each thing said as a recording; armed and disarmed here (its state: app.js).

import { api, events } from './api.js';
import { h, toast, duration, shortDate, PURPOSES, rowButton, meter, cap, busy, fill, quiet, banner, when, deco } from './ui.js';
import { openPlayer } from './player.js';

/// [the header's pill (a dot alone at phone width), the screen's line]
export const STATES = {
  off: [, 'Listening is off'],
  listening: ['Listening', 'Listening: waiting for speech'],
  speaking: ['Hearing speech', 'Hearing speech: recording it'],
  yielded: ['Listening paused', 'Paused for a recording made by hand: listening goes on when it ends'],
  'device-lost': ['Microphone lost', 'Microphone lost: trying it again every 2 seconds'],
};
const FIELDS = [['silence', 'Ends after a silence of', 0.3, 60, 0.1, 2], ['preRoll', 'Keeps before the first word', 0, 10, 0.1, 1],
  ['min', 'Drops speech shorter than', 0, 60, 0.1, 1], ['max', 'Splits recordings longer than', 5, 14400, 1, 600]];

export class ListenScreen {
  constructor(view, { onStatus, onReview, onBack }) {
    Object.assign(this, { view, onStatus, onReview, s: { state: 'off' } });
    const select = (name, label, ...options) => h('label', {}, label, h('select', { name }, options.map(([value, text]) => h('option', { value }, text))));
    this.form = h('form', { class: 'listen-set' },
      FIELDS.map(([name, label, min, max, step, value]) => h('label', {}, `${label} (${min}–${max} s)`,
        h('input', { type: 'number', name, min, max, step, value, inputmode: 'decimal' }))),
      h('label', {}, 'Stops by itself at (optional)', h('input', { type: 'time', name: 'until' })),
      select('format', 'Format', ['', 'recd’s default'], ['aac', 'AAC'], ['opus', 'Opus'], ['flac', 'FLAC (lossless)']),
      select('purpose', 'Purpose', ['', 'None'], ...PURPOSES.map((p) => [p, cap(p)])));
    this.el = h('section', { class: 'record', 'aria-label': 'Listen' },
      h('div', { style: 'text-align: left' }, quiet(null, { onclick: onBack }, '← Recordings')),
      this.icon = deco('div', 'big-icon', '👂'),
      this.line = h('p', { class: 'listen-state', role: 'status' }),
      this.facts = h('p', { class: 'hint' }),
      this.note = h('p', { class: 'notice', 'data-detector-note': '' }),
      this.meter = meter(),
      this.error = banner(),
      this.button = h('button', { class: 'primary', onclick: () => busy(this.button, () => this.toggle()) }),
      h('p', { class: 'hint' }, 'Each thing said becomes a recording of its own. Listening goes on when you leave this screen, until you stop it.'),
      this.form, h('h2', { class: 'section', id: 'listen-list' }, 'Recorded while listening'),
      this.list = h('ul', { class: 'rows', 'aria-labelledby': 'listen-list' }));
    this.meter.set([-160]);
  }

  show(s) {
    this.view.replaceChildren(this.el);
    this.stream ??= events(['listen.utterance', 'listen.level'], ({ type, data: u }) => {
      if (type === 'listen.level') return this.meter.set([u.peak], u.speech >= 0.5);
      toast(u.dropped ? `Too short: dropped (${u.speech.toFixed(1)} s of speech)` : `Recording kept ✓ ${duration(u.duration)}`);
      this.changed();
    });
    this.status(s);
    this.changed();
    this.button.focus();
  }

  leave() { this.stream?.close(); this.stream = null; }

  status(s) {
    const was = this.since, stop = s.lastStop, t = s.settings, f = this.form.elements;
    this.s = s;
    this.since = s.since ?? was;   // off: the last session's list stays
    this.line.replaceChildren(...(s.armed ? [deco('span', 'rec-mark'), ' '] : []), STATES[s.state][1]);
    this.icon.classList.toggle('live', s.state === 'speaking');
    this.facts.textContent = s.armed
      ? `On since ${shortDate(s.since)} · ${s.device} · ${s.detector === 'silero' ? 'voice detector (Silero)' : 'level gate'} · ${s.utterances} kept, ${s.dropped} too short`
        + (s.resumedAfterRestart ? ' · armed again after recd restarted' : '') + (s.state === 'device-lost' && stop ? ` · ${stop.message}` : '')
      : stop ? `Stopped ${shortDate(stop.at)}` + (stop.reason !== 'requested' ? `: ${stop.message}` : '') : '';
    this.note.hidden = s.detector !== 'level';
    this.note.textContent = cap(s.detectorNote ?? 'a level gate decides: it keeps any sound above its level, not only speech.');
    if (!/^(listen|speak)/.test(s.state)) this.meter.set();
    if (t) {
      for (const [name] of FIELDS) f[name].value = t[name];
      f.format.value = t.format; f.purpose.value = t.purpose ?? '';
      f.until.value = t.until ? new Date(t.until).toTimeString().slice(0, 5) : '';
    }
    for (const field of f) field.disabled = s.armed;
    this.button.textContent = s.armed ? '■ STOP LISTENING' : '● START LISTENING';
    this.button.dataset.action = s.armed ? 'listen-stop' : 'listen-start';
    if (this.since !== was) this.changed();
  }

  /// The settings; one out of its limits is said, and focused.
  read() {
    const f = this.form.elements, body = { format: f.format.value || undefined, purpose: f.purpose.value || undefined };
    for (const [name, label, min, max] of FIELDS) {
      const v = (body[name] = f[name].valueAsNumber);
      if (!(v >= min && v <= max)) { f[name].focus(); throw new Error(`${label}: from ${min} to ${max} seconds.`); }
    }
    if (f.until.value) {   // the next time it is that time
      const d = new Date(), [hh, mm] = f.until.value.split(':');
      d.setHours(hh, mm, 0, 0);
      if (d <= Date.now()) d.setDate(d.getDate() + 1);
      body.until = d.toISOString();
    }
    return body;
  }

  async toggle() {
    const armed = this.s.armed;
    this.error.hidden = true;
    try {
      this.onStatus(await (armed ? api.listenStop() : api.listenStart(this.read())));
      toast(armed ? 'Stopped listening' : 'Listening ✓');
    } catch (e) {
      if (e.status === 409) this.onStatus(await api.listen().catch(() => this.s));   // armed elsewhere first
      else this.error.say(e.message);
    }
  }

  /// The things said since the session began (not a take or an import made meanwhile).
  async changed() {
    if (!this.since || !this.el.isConnected) return;
    const from = Date.parse(this.since) - 1000 * (1 + (this.s.settings?.preRoll ?? 10));
    let rows;
    try { rows = (await api.list('recent', 0, 100)).recordings.filter((r) => r.source === 'listen' && Date.parse(r.createdAt) >= from && r.state !== 'recording'); } catch { return; }
    fill(this.list, rows.map((r) => {
      const meta = when(r);
      return h('li', { 'data-id': r.id }, rowButton(r, { class: 'row-main', 'aria-label': `Play ${r.title}, ${meta}`, onclick: async () => {
        try { const now = await api.get(r.id); await (now.state === 'pending' ? this.onReview(now) : openPlayer(now)); } catch (e) { toast(e); }
      } }, r.title, h('div', { class: 'row-meta' }, meta)));
    }), !rows.length && h('li', { class: 'hint' }, 'Nothing yet: each thing said shows here.'));
  }
}
