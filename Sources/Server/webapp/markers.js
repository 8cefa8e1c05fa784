// Markers (issue 47): a recording's marked moments in the player, as ticks on the waveform and a
// list under the controls (the time seeks; rename inline, delete at once); ⚑ Mark (or m) marks
// where the player is. Read again on `library.changed` for the recording (app.js).

import { api } from './api.js';
import { h, duration, toast, limit } from './ui.js';

const name = (m) => `Marker ${duration(m.time)}${m.label ? ' ' + m.label : ''}`;

/// `seek(t)`, `length()`: the player's; `now()`: where to mark, `{time}` (or `{}`: recd's own
/// position). Returns { ticks, el, button, mark(), load(), draw(), close() }.
export function markerPanel(id, { seek, length, now }) {
  let list = [], seq = 0, editing = false, closed = false;
  const ticks = h('div', { class: 'ticks' });
  const el = h('div', { class: 'markers', 'data-markers': '' });
  const mark = async () => {
    try {
      const m = await api.mark(id, now());
      toast(`Marked ${duration(m.time)}`);
      await load();
    } catch (e) { toast(e.message); }
  };
  const button = h('button', { type: 'button', 'data-action': 'mark', 'aria-label': 'Mark this moment', 'aria-keyshortcuts': 'm',
    title: 'Mark this moment (m)', onclick: mark }, '⚑ Mark');
  const key = (m, what) => ({ type: 'button', 'data-key': `${m.id}:${what}` });

  // Drawn anew, the focus kept on the same control (a change made elsewhere redraws under it).
  const draw = () => {
    if (editing || closed) return;
    const focused = document.activeElement?.dataset.key, len = length();
    ticks.replaceChildren(...(len ? list : []).map((m) => h('button', {
      ...key(m, 'tick'), class: 'tick', 'aria-label': name(m), title: m.label || name(m),
      style: `left: ${Math.min(100, (m.time / len) * 100)}%`, onclick: () => seek(m.time) })));
    el.replaceChildren(...(list.length ? [h('ul', { 'aria-label': 'Markers' }, list.map((m) => h('li', {},
      h('button', { ...key(m, 'go'), class: 'at', 'aria-label': `Go to ${name(m)}`, onclick: () => seek(m.time) }, duration(m.time)),
      h('span', { class: m.label ? 'label' : 'label hint' }, m.label || 'No label'),
      h('button', { ...key(m, 'rename'), class: 'quiet', 'aria-label': `Rename ${name(m)}`, onclick: (e) => rename(m, e.target.closest('li')) }, '✎'),
      h('button', { ...key(m, 'delete'), class: 'quiet', 'aria-label': `Delete ${name(m)}`, onclick: () => remove(m) }, '🗑️'))))] : []));
    if (focused) (el.querySelector(`[data-key="${focused}"]`) ?? ticks.querySelector(`[data-key="${focused}"]`))?.focus();
  };

  const load = async () => {
    const mine = ++seq;
    try {
      const r = await api.markers(id);
      if (mine === seq) { list = r.markers; draw(); }
    } catch { /* recd away: the page says so */ }
  };

  // The label in place: Enter (or leaving the field) keeps it, Escape does not.
  const rename = (m, li) => {
    editing = true;
    let done = false;
    const input = h('input', { value: m.label, 'aria-label': `Label of ${name(m)}`, placeholder: 'Label', autocomplete: 'off' });
    const finish = async (keep) => {
      if (done) return;
      done = true; editing = false;
      const label = input.value.trim();
      if (keep && label !== m.label) { try { await api.editMarker(id, m.id, { label }); } catch (e) { toast(e.message); } }
      await load();
      if (!document.activeElement || document.activeElement === document.body) el.querySelector(`[data-key="${m.id}:rename"]`)?.focus();
    };
    input.addEventListener('input', () => limit(input, 60));
    input.addEventListener('blur', () => finish(true));
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') finish(true);
      if (e.key === 'Escape') { e.stopPropagation(); finish(false); }   // not the player's Escape
    });
    li.querySelector('.label').replaceWith(input);
    input.focus(); input.select();
  };

  const remove = async (m) => {
    const at = list.indexOf(m);
    try {
      list = (await api.unmark(id, m.id)).markers;
      seq++;   // a read on its way is older
      toast(`${name(m)} deleted`);
      draw();
      (el.querySelectorAll('.at')[Math.min(at, list.length - 1)] ?? button).focus();   // the next one's time, or ⚑ Mark
    } catch (e) { toast(e.message); }
  };

  load();
  return { ticks, el, button, mark, load, draw, close() { closed = true; } };
}
