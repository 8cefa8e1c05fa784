// Shared pieces: elements, toasts, dialogs, times, the meter, the metadata form.

export const PURPOSES = ['motivational', 'craving', 'reflection', 'milestone'];
const TITLE_MAX = 40, NOTES_MAX = 200;

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  if (tag === 'button') el.type = 'button';   // never a form's submit
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v;   // (the CSP refuses a style attribute)
    else el.setAttribute(k, v === true ? '' : v);
  }
  return fill(el, ...children);
}

/// Decoration screen readers skip.
export const deco = (tag, cls, ...c) => h(tag, { class: cls, 'aria-hidden': 'true' }, ...c);

export const quiet = (label, props, ...children) => h('button', { class: 'quiet', 'aria-label': label, ...props }, ...children);

export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c != null && c !== false));
  return el;
}

/// `fn()` with `button` aria-disabled (the focus stays; a press meanwhile does nothing).
export async function busy(button, fn) {
  if (button.getAttribute('aria-disabled')) return;
  button.setAttribute('aria-disabled', 'true');
  try { return await fn(); } finally { button.removeAttribute('aria-disabled'); }
}

export function banner(tag = 'p', props) {
  const b = h(tag, { class: 'banner', role: 'alert', hidden: true, ...props });
  b.say = (...c) => { fill(b, ...c).hidden = false; };
  return b;
}

export function screenTitle(heading, name = heading) {
  document.getElementById('title').textContent = heading;
  document.title = `${name} — recd`;
}

let toastTimer;
/// A message (or an error's) in #toast (a live region: never `hidden`).
export function toast(text) {
  const region = fill(document.getElementById('toast'), h('div', { class: 'toast' }, text?.message ?? text));
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => region.replaceChildren(), 2000);
}

export function modal(onclose, ...children) {
  const dialog = fill(document.getElementById('dialog'), children);
  dialog.onclose = onclose;
  dialog.showModal();
  return dialog;
}

/// The seed's alerts: true when confirmed. Cancel has the focus: Enter twice must not delete.
export function confirmDialog(title, message, action) {
  return new Promise((resolve) => {
    const done = (v) => { dialog.close(); resolve(v); };
    const cancel = h('button', { 'data-cancel': '', onclick: () => done(false) }, 'Cancel');
    const dialog = modal(() => resolve(false),
      h('h2', { id: 'dialog-title' }, title),
      message && h('p', {}, message),
      h('div', { class: 'actions' }, cancel, h('button', { class: 'danger', 'data-confirm': '', onclick: () => done(true) }, action)));
    cancel.focus();
  });
}

export const two = (n) => String(n).padStart(2, '0');
export function duration(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  const t = Math.floor(seconds), m = Math.floor(t / 60) % 60, hours = Math.floor(t / 3600);
  return (hours ? `${hours}:${two(m)}` : m) + ':' + two(t % 60);
}

/// "Oct 25, 3:42 PM" (and the year when not this one).
export function shortDate(iso) {
  const d = new Date(iso), year = d.getFullYear() !== new Date().getFullYear() ? 'numeric' : undefined;
  return d.toLocaleString('en-US', { month: 'short', day: 'numeric', year, hour: 'numeric', minute: '2-digit' });
}

export const when = (r, what = duration(r.duration)) => `${shortDate(r.createdAt)} • ${what}`;
export const icon = (r) => (r.type === 'video' ? '🎥' : '🎙️');
export const count = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`, plays = (n) => count(n, 'play');
export const cap = (s) => s[0].toUpperCase() + s.slice(1);

/// The input level: `set(peaks, speech)`; `set()` at rest (lanes kept).
export function meter() {
  const m = h('div', { class: 'meter', role: 'meter', 'aria-label': 'Input level', 'aria-valuemin': -60, 'aria-valuemax': 0, 'aria-valuenow': -60 });
  m.set = (peaks, speech) => {
    const peak = peaks ? Math.max(...peaks) : -160;
    if (peaks) m.replaceChildren(...peaks.map((p) => h('div', { class: 'lane' }, h('div', { class: 'level', style: `width: ${Math.max(0, Math.min(100, (p + 60) / 0.6))}%` }))));
    else for (const l of m.querySelectorAll('.level')) l.style.width = '0%';
    m.setAttribute('aria-valuenow', Math.round(Math.max(-60, peak)));
    m.dataset.peak = peak;
    m.toggleAttribute('data-speech', !!speech);
    return peak;
  };
  return m;
}

export const rowButton = (r, props, title, ...text) => h('button', props, deco('span', 'row-icon', icon(r)),
  h('span', { class: 'row-text' }, h('div', { class: 'row-title' }, title), ...text));

/// Characters as recd counts them: graphemes (else code points: never looser).
const segmenter = globalThis.Intl?.Segmenter && new Intl.Segmenter();
const graphemes = (text) => (segmenter ? Array.from(segmenter.segment(text), (g) => g.segment) : [...text]);

/// `maxlength` in graphemes: past `max`, what was just typed is cut.
export function limit(field, max) {
  if (graphemes(field.value).length <= max) return;
  const caret = field.selectionEnd ?? field.value.length;
  const after = field.value.slice(caret), before = graphemes(field.value.slice(0, caret)).slice(0, Math.max(0, max - graphemes(after).length)).join('');
  field.value = graphemes(before + after).slice(0, max).join('');
  field.setSelectionRange(before.length, before.length);
}

export function metadataForm(initial = {}) {
  let purpose = initial.purpose ?? null;
  const opt = initial.optional ? ' (Optional)' : '';
  const field = (tag, name, label, max, placeholder) => {
    const input = h(tag, { name, placeholder, autocomplete: 'off', oninput: check, oncompositionend: check }), out = h('small', { class: 'hint limit', 'aria-live': 'polite' });
    input.value = initial[name] ?? '';
    function check(e) {
      if (!e?.isComposing) limit(input, max);   // not mid-IME
      const n = graphemes(input.value).length;
      const c = n >= max * 0.75;   // "150/200" from 3/4 of it
      out.textContent = c ? `${n}/${max}` : `(${max} char max)`;
      out.classList.toggle('count', c);
    }
    check({ isComposing: true });
    return [input, h('label', {}, h('span', {}, `${label}${opt}:`), input, out)];
  };
  const [title, titleLabel] = field('input', 'title', 'Title', TITLE_MAX, 'Add a title...');
  const [notes, notesLabel] = field('textarea', 'notes', 'Notes', NOTES_MAX, 'Add notes...');
  const chips = PURPOSES.map((p) => h('button', {
    'aria-pressed': String(p === purpose), 'data-purpose': p,
    onclick: (e) => {
      purpose = purpose === p ? null : p;
      for (const c of chipBox.querySelectorAll('button')) c.setAttribute('aria-pressed', c.dataset.purpose === purpose);
      e.currentTarget.focus();
    },
  }, cap(p)));
  const chipBox = h('fieldset', { class: 'chips' }, h('legend', {}, `Purpose${opt}:`), chips);
  const form = h('form', { class: 'meta', onsubmit: (e) => e.preventDefault() }, titleLabel, notesLabel, chipBox);
  form.read = () => ({ title: title.value.trim(), notes: notes.value, purpose });
  return form;
}

/// A one-key shortcut (not while typing, in a dialog or with a modifier).
export function onKey(key, fn) {
  const on = (e) => {
    if (e.key.toLowerCase() !== key || e.repeat || e.ctrlKey || e.altKey || e.metaKey
      || e.target.closest?.('input, textarea, select, dialog, [contenteditable]')) return;
    e.preventDefault();
    fn();
  };
  document.addEventListener('keydown', on);
  return () => document.removeEventListener('keydown', on);
}
