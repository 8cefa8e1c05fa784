// Small shared pieces: elements, toasts, confirmations, times, the seed's metadata form.

export const PURPOSES = ['motivational', 'craving', 'reflection', 'milestone'];
export const TITLE_MAX = 40, NOTES_MAX = 200;

/// h('button', {class: 'primary', onclick}, 'text', child…)
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  if (tag === 'button') el.type = 'button';   // never a form's submit
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v;   // CSSOM: the CSP refuses a style attribute
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null && c !== false) el.append(c);
  return el;
}

/// The screen's name in the header and the tab's title.
export function screenTitle(heading, name = heading) {
  document.getElementById('title').textContent = heading;
  document.title = `${name} — recd`;
}

let toastTimer;
/// A message in the live region #toast (never `hidden`: it would not be read), each a new element.
export function toast(text) {
  const region = document.getElementById('toast');
  region.replaceChildren(h('div', { class: 'toast' }, text));
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => region.replaceChildren(), 2000);
}

/// The page's <dialog>, named by #dialog-title, modal with `children`.
export function modal(onclose, ...children) {
  const dialog = document.getElementById('dialog');
  dialog.replaceChildren(...children);
  dialog.setAttribute('aria-labelledby', 'dialog-title');
  dialog.onclose = onclose;
  dialog.showModal();
  return dialog;
}

/// The seed's alerts: resolves true when confirmed. Cancel has the focus: Enter twice must not delete.
export function confirmDialog(title, message, action, danger = true) {
  return new Promise((resolve) => {
    const done = (v) => { dialog.close(); resolve(v); };
    const cancel = h('button', { 'data-cancel': '', onclick: () => done(false) }, 'Cancel');
    const dialog = modal(() => resolve(false),
      h('h2', { id: 'dialog-title' }, title),
      ...(message ? [h('p', {}, message)] : []),
      h('div', { class: 'actions' },
        cancel,
        h('button', { class: danger ? 'danger' : 'primary', 'data-confirm': '', onclick: () => done(true) }, action)));
    cancel.focus();
  });
}

export function duration(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  const t = Math.floor(seconds), m = Math.floor(t / 60) % 60, hours = Math.floor(t / 3600), s = t % 60;
  return (hours ? `${hours}:${String(m).padStart(2, '0')}` : `${m}`) + ':' + String(s).padStart(2, '0');
}

/// "Oct 25, 3:42 PM" as the seed's rows show it (the year when it is not this one).
export function shortDate(iso) {
  const d = new Date(iso), thisYear = d.getFullYear() === new Date().getFullYear();
  return d.toLocaleString('en-US', { month: 'short', day: 'numeric', year: thisYear ? undefined : 'numeric', hour: 'numeric', minute: '2-digit' });
}

export const icon = (r) => (r.type === 'video' ? '🎥' : '🎙️');
export const plays = (n) => (n === 1 ? '1 play' : `${n} plays`);

/// Characters as recd counts them: grapheme clusters, not UTF-16 units (`maxlength`). Without
/// Intl.Segmenter, code points: stricter than recd, never looser.
const segmenter = globalThis.Intl?.Segmenter ? new Intl.Segmenter() : null;
const graphemes = (text) => (segmenter ? Array.from(segmenter.segment(text), (g) => g.segment) : [...text]);

/// `maxlength` in graphemes: what goes past `max` is cut from what was just typed.
export function limit(field, max) {
  if (graphemes(field.value).length <= max) return;
  const caret = field.selectionEnd ?? field.value.length;
  const after = field.value.slice(caret);
  const before = graphemes(field.value.slice(0, caret)).slice(0, Math.max(0, max - graphemes(after).length)).join('');
  field.value = graphemes(before + after).slice(0, max).join('');
  field.setSelectionRange(before.length, before.length);
}

/// Title, notes and purpose of the preview (5.3.3) and edit (5.4.3) sheets; `read()` gives the body.
export function metadataForm(initial = {}) {
  let purpose = initial.purpose ?? null;
  // "(40 char max)", from 3/4 of the limit the count ("150/200").
  const count = (input, max, out) => {
    const n = graphemes(input.value).length;
    out.textContent = n >= max * 0.75 ? `${n}/${max}` : `(${max} char max)`;
    out.classList.toggle('count', n >= max * 0.75);
  };
  const titleCount = h('small', { class: 'hint limit', 'aria-live': 'polite' });
  const notesCount = h('small', { class: 'hint limit', 'aria-live': 'polite' });
  const title = h('input', { name: 'title', placeholder: 'Add a title...', autocomplete: 'off' });
  const notes = h('textarea', { name: 'notes', placeholder: 'Add notes...' });
  title.value = initial.title ?? '';
  notes.value = initial.notes ?? '';
  const limited = (field, max, out) => {
    const check = (e) => { if (!e?.isComposing) limit(field, max); count(field, max, out); };   // not mid-IME
    field.addEventListener('input', check);
    field.addEventListener('compositionend', check);
  };
  limited(title, TITLE_MAX, titleCount);
  limited(notes, NOTES_MAX, notesCount);
  count(title, TITLE_MAX, titleCount); count(notes, NOTES_MAX, notesCount);
  const chips = PURPOSES.map((p) => h('button', {
    'aria-pressed': String(p === purpose), 'data-purpose': p,
    onclick: (e) => {
      purpose = purpose === p ? null : p;   // tap the selected chip to unselect it
      for (const c of chipBox.querySelectorAll('button')) c.setAttribute('aria-pressed', c.dataset.purpose === purpose);
      e.currentTarget.focus();
    },
  }, p[0].toUpperCase() + p.slice(1)));
  const opt = initial.optional ? ' (Optional)' : '';
  const chipBox = h('fieldset', { class: 'chips' }, h('legend', {}, `Purpose${opt}:`), chips);
  const form = h('form', { class: 'meta', onsubmit: (e) => e.preventDefault() },
    h('label', {}, h('span', {}, `Title${opt}:`), title, titleCount),
    h('label', {}, h('span', {}, `Notes${opt}:`), notes, notesCount),
    chipBox);
  form.read = () => ({ title: title.value.trim(), notes: notes.value, purpose });
  return form;
}

/// A one-key shortcut, not while typing, in a dialog or with Ctrl, Alt or ⌘; returns its remover.
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
