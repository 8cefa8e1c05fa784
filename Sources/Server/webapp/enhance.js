// Enhance (issue 47): recd's cleaned copy beside the original; A/B in the player.

import { api } from './api.js';
import { h, toast, confirmDialog, busy, quiet } from './ui.js';

const lufs = (n) => String(Math.round(n)).replace('-', '−');

/// `head`: ✨ and the copy's ⬇; `el`: the A/B row.
export function enhancePanel(r, media) {
  let copy = null, on = false;
  // The other file at the same time, speed and state (no `ended`: no play counted).
  const use = (v) => {
    if (v === on || (v && !copy) || !media.hasAttribute('src')) return;
    const t = media.currentTime, go = !media.paused;
    media.src = api.media(r, (on = v) && copy);
    media.currentTime = t;
    if (go) media.play().catch(() => {});
    draw();
  };
  const show = (c) => { copy = c; if (!c) use(false); draw(); };
  const ask = async (method, done) => { try { show((await api.enhanced(r.id, method)).copy); toast(done); } catch (e) { toast(e); } };
  const making = (on, t = on ? 'Enhancing…' : 'Enhance') => {
    make.title = t; make.setAttribute('aria-label', t); make.setAttribute('aria-busy', on); make.textContent = on ? '⏳' : '✨';
  };
  const make = quiet('Enhance', { 'data-action': 'enhance', title: 'Enhance', hidden: true, onclick: () => busy(make, async () => {
    making(true); await ask('POST', 'Enhanced copy made ✓'); making(false);
    ab[1].focus();
  }) }, '✨');
  const ab = ['Original', 'Enhanced'].map((t, i) => h('button', { 'data-action': t.toLowerCase(), onclick: () => use(!!i) }, t));
  const pair = h('div', { class: 'tabs', role: 'group', 'aria-label': 'Sound played' }, ab);
  const level = h('span', { class: 'hint' });
  const remove = quiet('Remove enhanced copy', { 'data-action': 'unenhance', onclick: async () => {
    if (await confirmDialog('Remove the enhanced copy?', 'The original stays as it is.', 'Remove')) await ask('DELETE', 'Enhanced copy removed');
    (copy ? remove : make).focus();
  } }, '🗑️');
  const link = h('a', { class: 'quiet', download: true, hidden: true, 'data-action': 'download-enhanced',
    'aria-label': `Download ${r.title} (enhanced)` }, '⬇✨');
  const draw = () => {
    make.hidden = !!copy;
    el.hidden = link.hidden = !copy;
    ab.forEach((b, i) => b.setAttribute('aria-pressed', on === !!i));
    if (!copy) return;
    link.href = api.download(r, copy);
    const l = [copy.originalLoudness, copy.loudness];
    level.textContent = l.some((x) => x == null) ? '' : l.map(lufs).join(' → ') + ' LUFS';
  };
  const el = h('div', { class: 'time-row', 'data-enhance': '', hidden: true }, pair, level, remove);
  const load = () => api.enhanced(r.id).then((s) => show(s.copy), () => {});
  load();
  return { el, head: [make, link], load };
}
