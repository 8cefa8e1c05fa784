// The transcript under the player (issue 38): the word heard marked; a click (or Enter) plays from a word.

import { api, events } from './api.js';
import { h } from './ui.js';

export function transcriptPanel(recording, seek) {
  const box = h('div', { class: 'transcript', 'data-transcript': '', 'data-state': 'loading' });
  let words = [], spans = [], marked = -1, stream = null, closed = false, userScrolled = 0;
  const say = (text, cls = 'hint') => box.replaceChildren(h('p', { class: cls, title: cls !== 'hint' && text }, text));

  const scrolled = () => { userScrolled = Date.now(); };

  const show = (t) => {
    box.dataset.state = t.state;
    words = []; spans = []; marked = -1;
    if (t.state === 'pending') { say('Transcribing…'); return listen(); }
    stream?.close(); stream = null;
    if (t.state === 'none' || t.state === 'failed') {
      return say((t.state === 'failed' ? 'The transcript could not be made' : 'No transcript') + (t.error ? `: ${t.error}` : '.'), 'hint quiet-line');
    }
    for (const s of t.segments ?? []) for (const w of s.words ?? []) if (w.word.trim()) words.push(w);
    if (!words.length) return say('No words were heard.');
    const paragraphs = [];
    let p, lastEnd;
    for (const w of words) {
      if (!p || w.start - lastEnd > 2) { p = h('p', {}); paragraphs.push(p); } else p.append(' ');
      const span = h('span', { class: 'word', tabindex: '-1', 'data-start': w.start }, w.word.trim());
      spans.push(span); p.append(span); lastEnd = w.end;
    }
    const go = (e) => {
      const span = e.target.closest?.('.word');
      if (span) { userScrolled = 0; seek(Number(span.dataset.start)); }
    };
    box.replaceChildren(h('div', { class: 'words', role: 'region', tabindex: '0', 'aria-label': 'Transcript',
      'aria-description': 'Arrow keys choose a word, Enter plays from it', onwheel: scrolled, ontouchmove: scrolled, onclick: go,
      onkeydown: (e) => {
        scrolled();
        const i = spans.indexOf(e.target), d = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
        if (d) { e.preventDefault(); (spans[i < 0 ? Math.max(marked, 0) : i + d] ?? e.target).focus(); } else if (e.key === 'Enter') go(e);
      } }, paragraphs), h('p', { class: 'hint note' }, 'Transcribed on this device · may contain mistakes'));
  };

  const read = async () => {
    try { if (!closed) show(await api.transcript(recording.id)); } catch (e) {
      if (!closed) { box.dataset.state = 'error'; say(`No transcript: ${e.message}`, 'hint quiet-line'); }
    }
  };

  const listen = () => {
    if (stream) return;
    stream = events(['transcript.progress', 'transcript.done'], ({ data: e }) => {
      if (e?.recordingID?.toLowerCase() !== recording.id.toLowerCase() || closed) return;
      if (e.state === 'pending' && box.dataset.state === 'pending') {
        box.firstChild.textContent = `Transcribing… ${Math.round((e.progress ?? 0) * 100)}%`;
      } else if (e.state !== 'pending') read();
    }, () => read());
  };

  /// The word heard: the last begun, until a second past its end.
  const mark = (position) => {
    if (!words.length) return;
    let lo = 0, hi = words.length - 1, at = -1;
    while (lo <= hi) { const mid = (lo + hi) >> 1; if (words[mid].start <= position + 0.02) { at = mid; lo = mid + 1; } else hi = mid - 1; }
    if (at >= 0 && position > words[at].end + 1) at = -1;
    if (at === marked) return;
    if (marked >= 0) { spans[marked].classList.remove('now'); spans[marked].removeAttribute('aria-current'); }
    const span = spans[marked = at];
    if (!span) return;
    span.classList.add('now'); span.setAttribute('aria-current', 'true');
    // In view in its box (not the page): a third down.
    const area = span.closest('.words');
    if (!area || Date.now() - userScrolled < 4000) return;
    const top = span.offsetTop, bottom = top + span.offsetHeight;
    if (top < area.scrollTop || bottom > area.scrollTop + area.clientHeight) {
      area.scrollTo({ top: Math.max(0, top - area.clientHeight / 3), behavior: 'smooth' });
    }
  };

  read();
  return { el: box, mark, close() { closed = true; stream?.close(); stream = null; } };
}
