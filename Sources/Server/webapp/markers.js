// Markers (issue 47): ticks on the player's waveform, a list; ⚑ Mark (or m) marks the position.

import { api } from './api.js';
import { h, duration, toast, limit, fill, quiet } from './ui.js';

const name = (m) => `Marker ${duration(m.time)}${m.label ? ' ' + m.label : ''}`;

export const markAt = (id, body) => api.mark(id, body).then((m) => toast(`Marked ${duration(m.time)}`));

export const markButton = (onclick) => h('button', { 'data-action': 'mark', 'aria-label': 'Mark this moment',
  'aria-keyshortcuts': 'm', title: 'Mark this moment (m)', onclick }, '⚑ Mark');

/// `now()`: the body, `{time}` or `{}` (recd's position).
export function markerPanel(id, { seek, length, now }) {
  let list = [], seq = 0, closed = false;
  const ticks = h('div', { class: 'ticks' }), el = h('div', { class: 'markers' });
  const load = async () => {
    const mine = ++seq;
    try { const r = await api.markers(id); if (mine === seq) { list = r.markers; draw(); } } catch { /* recd away */ }
  };
  const mark = () => markAt(id, now()).then(load, toast);
  const button = markButton(mark);
  const key = (m, what) => ({ 'data-key': `${m.id}:${what}` });
  const go = (m) => ({ 'aria-label': name(m), onclick: () => seek(m.time) });
  // The label: kept on Enter or leaving; Escape puts it back.
  const field = (m) => {
    const input = h('input', { ...key(m, 'label'), value: m.label, placeholder: 'Add a label', 'aria-label': `Label of ${name(m)}`,
      autocomplete: 'off', enterkeyhint: 'done', oninput: () => limit(input, 60),
      onchange: () => input.value.trim() !== m.label && api.editMarker(id, m.id, { label: input.value.trim() }).then(load, toast),
      onkeydown: (e) => { if (e.key === 'Escape' && input.value !== m.label) { input.value = m.label; e.stopPropagation(); } } });
    return input;
  };
  const remove = async (m) => {
    const at = list.indexOf(m);
    try {
      list = (await api.unmark(id, m.id)).markers; seq++;   // a read on its way is older
      toast(`${name(m)} deleted`); draw();
      (el.querySelectorAll('.at')[Math.min(at, list.length - 1)] ?? button).focus();
    } catch (e) { toast(e); }
  };

  // Drawn anew, the focus (and what is typed) kept.
  const draw = () => {
    if (closed) return;
    const a = document.activeElement, was = a?.dataset.key, typed = a?.tagName === 'INPUT' ? a.value : null, len = length();
    ticks.replaceChildren(...(len ? list : []).map((m) => h('button', {
      ...go(m), ...key(m, 'tick'), class: 'tick', title: m.label || name(m), style: `left: ${Math.min(100, (m.time / len) * 100)}%` })));
    fill(el, list.length > 0 && h('ul', { 'aria-label': 'Markers' }, list.map((m) => h('li', {},
      h('button', { ...go(m), ...key(m, 'go'), class: 'at', 'aria-label': `Go to ${name(m)}` }, duration(m.time)),
      field(m), quiet(`Delete ${name(m)}`, { ...key(m, 'delete'), onclick: () => remove(m) }, '🗑️')))));
    const b = was && document.querySelector(`[data-key="${was}"]`);
    if (b) { if (typed !== null) b.value = typed; b.focus(); }
  };

  load();
  return { ticks, el, button, mark, load, draw, close() { closed = true; } };
}
