// Trim (issue 47): two sliders on the waveform choose the span kept; saved in place or as new.

import { api } from './api.js';
import { h, duration, toast, confirmDialog, quiet } from './ui.js';

const tenths = (t) => { const d = Math.round(t * 10); return `${duration(d / 10)}.${d % 10}`; };

/// `done(r)`: what was saved, to open.
export function trimPanel(r, media, length, done) {
  const span = [0, 0];
  let playing = false, grab = 0;
  const at = (e) => { const b = box.getBoundingClientRect(); return ((e.clientX - b.left) / b.width) * length(); };
  const say = h('span', { class: 'hint' });
  const set = (i, t) => {
    span[i] = Math.round(Math.max(i ? span[0] : 0, Math.min(i ? length() : span[1], t)) * 1000) / 1000;
    const n = length() || 1, x = span.map((t) => t / n);
    handles.forEach((el, j) => {
      el.style.left = x[j] * 100 + '%';
      const v = { min: j ? span[0] : 0, max: j ? n : span[1], now: span[j], text: tenths(span[j]) };
      for (const k in v) el.setAttribute('aria-value' + k, v[k]);
    });
    box.style.cssText = `--s: ${x[0]}; --e: ${x[1]}`;
    say.textContent = `Keep ${tenths(span[0])}–${tenths(span[1])}`;
  };
  const handles = ['start', 'end'].map((name, i) => {
    const el = h('div', { role: 'slider', tabindex: '0', 'aria-label': `Trim ${name}`, 'data-handle': name,
      onkeydown: (e) => {
        const by = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -50, PageUp: 50, Home: -1e6, End: 1e6 }[e.key];
        if (by) { set(i, span[i] + by / 10); e.preventDefault(); }
      },
      // (dragged as far as the pointer moves: no jump)
      onpointerdown: (e) => { el.setPointerCapture(e.pointerId); el.focus(); e.preventDefault(); grab = span[i] - at(e); },
      onpointermove: (e) => { if (e.buttons) set(i, at(e) + grab); } });
    return el;
  });
  const box = h('div', { class: 'cut', hidden: true }, handles);
  const over = () => { if (playing && media.currentTime >= span[1]) { playing = false; media.pause(); media.currentTime = span[1]; } };
  const watch = () => { over(); if (playing) requestAnimationFrame(watch); };
  media.addEventListener('timeupdate', over);
  media.addEventListener('pause', () => { playing = false; });
  const save = async (asNew) => {
    if (!asNew && !await confirmDialog(`Trim '${r.title}'?`, `Only ${say.textContent.slice(5)} is kept. This cannot be undone.`, 'Trim')) return;
    try {
      const t = await api.trim(r.id, { start: span[0] || undefined, end: span[1] < length() ? span[1] : undefined, asNew });
      toast(`${asNew ? `Saved as '${t.title}'` : 'Trimmed'}: ${tenths(t.duration)} ✓`);
      done(t);
    } catch (e) { toast(e); }
  };
  const button = (action, text, onclick) => h('button', { 'data-action': 'trim-' + action, onclick }, text);
  const el = h('div', { class: 'time-row', role: 'group', 'aria-label': 'Trim', hidden: true }, say,
    button('preview', '▶ Preview', async () => { media.currentTime = span[0]; await media.play().catch(() => {}); playing = true; watch(); }),
    button('new', 'Save as new', () => save(true)),
    button('save', 'Save in place', () => save(false)),
    quiet('Cancel trim', { 'data-action': 'trim-cancel', title: 'Cancel', onclick: () => show(false) }, '✕'));
  const toggle = quiet('Trim', { 'data-action': 'trim', 'aria-expanded': 'false', title: 'Trim', onclick: () => show(el.hidden) }, '✂');
  const show = (on) => {
    box.hidden = el.hidden = !on;
    toggle.setAttribute('aria-expanded', on);
    if (on) { span[1] = length(); set(0, 0); set(1, span[1]); handles[0].focus(); } else { if (playing) media.pause(); toggle.focus(); }
  };
  return { box, el, toggle, on: () => !el.hidden };
}
