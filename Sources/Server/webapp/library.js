// The library (seed 5.1, 5.4, Quick Play) by pages; search (issue 38).

import { api } from './api.js';
import { h, toast, confirmDialog, duration, shortDate, plays, metadataForm, modal, rowButton as main, fill, quiet, deco, banner, count, when } from './ui.js';
import { openPlayer } from './player.js';

const PAGE = 50;

/// recd's snippet ("…the «storm» came…") as text nodes with <mark>s, never markup.
const marked = (snippet) => snippet.split(/(«[^«»]*»)/).filter(Boolean)
  .map((part) => (part.startsWith('«') && part.endsWith('»') ? h('mark', {}, part.slice(1, -1)) : part));

/// The first <mark> inside the snippet's two lines: the fewest words before it give way to "…".
function fitSnippet(box) {
  const mark = box.querySelector('mark');
  if (!mark) return;
  const lead = mark.previousSibling;
  if (!lead || lead.nodeType !== Node.TEXT_NODE) return;
  box.dataset.lead ??= lead.data;   // as recd sent it
  const words = box.dataset.lead.split(/(?<=\s)/);
  const shown = (n) => {
    lead.data = n === 0 ? box.dataset.lead : '…' + words.slice(n).join('');
    const b = box.getBoundingClientRect(), m = mark.getBoundingClientRect();
    const cut = box.scrollHeight > box.clientHeight + 1;
    return m.bottom <= b.bottom + 0.5 - (cut ? m.height : 0);
  };
  if (shown(0)) return;
  let lo = 1, hi = words.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (shown(mid)) hi = mid; else lo = mid + 1; }
  shown(lo);
}

export class Library {
  constructor(view, { onRecord, onReview, onRejoin, isVisible }) {
    Object.assign(this, { view, onRecord, onReview, onRejoin, isVisible, by: 'recent', rows: [], total: 0, top: [], query: '', searchSeq: 0 });
    this.field = h('input', { type: 'search', name: 'q', 'aria-label': 'Search recordings', placeholder: 'Search recordings',
      autocomplete: 'off', enterkeyhint: 'search' });
    this.field.addEventListener('input', () => this.typed(250));
    this.searchForm = h('form', { class: 'search', role: 'search', onsubmit: (e) => { e.preventDefault(); this.typed(0); } }, this.field);
    this.body = h('div');
    let width = 0;   // snippets fitted again when it changes
    new ResizeObserver(([e]) => {
      const w = Math.round(e.contentRect.width);
      if (w !== width && (width = w) && this.query) this.fitSnippets();
    }).observe(this.body);
  }

  fitSnippets() { this.body.querySelectorAll('.snippet').forEach(fitSnippet); }

  typed(delay) {
    clearTimeout(this.typing);
    const q = this.field.value.trim();
    if (!/[\p{L}\p{N}]/u.test(q)) {
      this.searchSeq++;   // an answer on its way is stale
      if (this.query) { this.query = ''; this.hits = null; this.searchError = null; this.render(); }
      return;
    }
    this.typing = setTimeout(() => this.search(q).catch(() => {}), delay);
  }

  async search(q) {
    const seq = ++this.searchSeq;
    let r = { results: [] }, error = null;
    try { r = await api.search(q); } catch (e) { error = e; }
    if (seq !== this.searchSeq || !this.isVisible()) return;
    this.query = q; this.hits = r.results; this.suggestions = r.suggestions ?? []; this.searchError = error;
    this.render();
  }

  /// The first pages read again (as many as shown).
  async load() {
    if (!this.isVisible()) return;   // read again when shown
    const [list, top] = await Promise.all([api.list(this.by, 0, Math.min(1000, Math.max(PAGE, this.rows.length))), api.top()]);
    if (!this.isVisible()) return;
    this.rows = list.recordings; this.total = list.total; this.top = top.recordings;
    this.render();
  }

  /// `library.changed`, a burst coalesced.
  changed() {
    if (this.refreshing) return;
    this.refreshing = setTimeout(async () => {
      this.refreshing = null;
      try { await this.load(); if (this.query) await this.search(this.query); } catch { /* said at the next */ }
    }, 150);
  }

  async more() {
    const first = this.rows.length, pressed = document.activeElement?.classList.contains('more');
    const list = await api.list(this.by, first, PAGE);
    this.rows.push(...list.recordings); this.total = list.total;
    this.render();
    if (pressed) this.lis()[first]?.querySelector('.row-main')?.focus();
  }

  lis() { return [...this.view.querySelectorAll('li[data-id]')]; }

  render() {
    const el = document.activeElement, li = this.view.contains(el) ? el.closest('li[data-id]') : null;
    const keep = li && { id: li.dataset.id, action: el.dataset.action ?? 'main', index: this.lis().indexOf(li) };
    // A button outside the rows: the one in its place.
    const at = !li && ['.tabs button', '.quick button', '.more'].map((c) => [c, [...this.view.querySelectorAll(c)].indexOf(el)]).find((p) => p[1] >= 0);
    this.draw();
    if (this.view.contains(el)) return;
    if (keep) this.focusRow(keep.id, keep.action, keep.index);
    else if (at) this.view.querySelectorAll(at[0])[at[1]]?.focus();
  }

  /// The focus on a row's button (data-action, or 'main'); else the row at `index`; else the screen.
  focusRow(id, action, index = -1) {
    const rows = this.lis();
    const li = rows.find((e) => e.dataset.id === id) ?? (index >= 0 ? rows[Math.min(index, rows.length - 1)] : null);
    const same = li?.dataset.id === id;
    const target = li && ((same && li.querySelector(`[data-action="${action}"]`)) || li.querySelector('.row-main'));
    (target ?? this.view.querySelector('.empty button') ?? this.view).focus();
  }

  draw() {
    if (this.total === 0) {
      this.field.value = ''; this.query = ''; this.hits = null;
      this.view.replaceChildren(h('section', { class: 'empty', 'aria-labelledby': 'empty-title' },
        deco('div', 'icon', '🎥'),
        h('h2', { id: 'empty-title' }, 'No recordings yet'),
        h('p', {}, 'Create motivational content to play during cravings'),
        h('button', { class: 'primary', onclick: () => this.onRecord() }, 'RECORD YOUR FIRST')));
      return;
    }
    if (this.view.firstChild !== this.searchForm || this.body.parentNode !== this.view) this.view.replaceChildren(this.searchForm, this.body);
    if (this.query) { this.body.replaceChildren(...this.results()); this.fitSnippets(); return; }
    const order = (by, label) => h('button', {
      'aria-pressed': String(this.by === by),
      onclick: () => { this.by = by; this.rows = []; return this.load(); },
    }, label);
    requestAnimationFrame(() => performance.mark('library-painted'));   // bench/webapp.py
    fill(this.body, this.top.length > 0 && [h('h2', { class: 'section', id: 'quick-title' }, 'Quick Play'),
      h('ul', { class: 'quick', 'aria-labelledby': 'quick-title' }, this.top.map((r) => h('li', {},
        main(r, { onclick: () => this.play(r), 'aria-label': `Play ${r.title}, ${plays(r.playCount)}` },
          r.title, h('div', { class: 'row-meta' }, `▶ ${plays(r.playCount)}`)))))],
      h('h2', { class: 'section' }, `All recordings (${this.total})`),
      h('div', { class: 'tabs', role: 'group', 'aria-label': 'Order' }, order('recent', 'Recent'), order('plays', 'Most Played')),
      h('ul', { class: 'rows', 'aria-label': 'Recordings' }, this.rows.map((r) => this.row(r))),
      this.rows.length < this.total && h('button', { class: 'more', onclick: () => this.more() }, `Show more (${this.total - this.rows.length} left)`));
  }

  results() {
    if (this.searchError) return [h('div', { class: 'banner', role: 'alert' }, this.searchError.message)];
    if (!this.hits.length) {
      // A button per close word: searched in place of the word not found.
      const parts = [];
      for (const s of this.suggestions) s.closest.forEach((w, i) => {
        const q = this.query.replace(new RegExp(`(?<![\\p{L}\\p{N}])${s.word}(?![\\p{L}\\p{N}])`, 'giu'), w);
        parts.push(i ? ' or ' : parts.length ? ', ' : ' — did you mean ', quiet(`Search for ${q}`, { onclick: () => this.again(q) }, w));
      });
      return [h('p', { class: 'hint', 'data-no-hits': '' }, `No recordings say “${this.query}”`, ...parts, parts.length ? '?' : '.')];
    }
    return [h('h2', { class: 'section' }, count(this.hits.length, 'recording') + ' found'),
      h('ul', { class: 'rows hits', 'aria-label': 'Search results' }, this.hits.map((hit) => {
        const r = hit.recording;
        const where = hit.field === 'transcript' ? (hit.time == null ? 'said in it' : `at ${duration(hit.time)}`)
          : hit.field === 'notes' ? 'in its notes' : 'in its title';
        const inTitle = hit.field === 'title' && hit.snippet.replace(/[«»]/g, '') === r.title;
        return h('li', { 'data-id': r.id, 'data-field': hit.field },
          main(r, { class: 'row-main', onclick: () => this.openHit(hit) },
            inTitle ? marked(hit.snippet) : r.title,
            inTitle ? null : h('div', { class: 'snippet' }, marked(hit.snippet)),
            h('div', { class: 'row-meta', 'data-where': '' }, when(r, where))));
      }))];
  }

  async again(q) {
    this.field.value = q;
    await this.search(q);
    (this.body.querySelector('.row-main') ?? this.field).focus();
  }

  openHit(hit) {
    const r = hit.recording;
    if (r.state === 'recording') return this.onRejoin();
    if (r.state === 'pending') return this.onReview(r);
    return this.play(r, false, hit.time ?? 0);
  }

  row(r) {
    if (r.state === 'pending' || r.state === 'recording') return this.unsaved(r);
    const meta = when(r);
    return h('li', { 'data-id': r.id },
      main(r, { class: 'row-main', onclick: () => this.play(r), 'aria-label': `Play ${r.title}, ${meta}, ${plays(r.playCount)}` },
        r.title,
        h('div', { class: 'row-meta' }, meta),
        h('div', { class: 'row-meta' }, `▶ ${plays(r.playCount)}`)),
      h('div', { class: 'row-actions' },
        quiet(`Play ${r.title} on recd's speaker`, { title: "Play on recd's speaker", 'data-action': 'speaker', onclick: () => this.play(r, true) },
          '🔈', h('span', { class: 'label' }, ' Speaker')),
        quiet(`Edit ${r.title}`, { 'data-action': 'edit', onclick: () => this.edit(r) }, 'Edit'),
        quiet(`Delete ${r.title}`, { 'data-action': 'delete', onclick: () => this.remove(r) }, '🗑️')));
  }

  unsaved(r) {
    const live = r.state === 'recording';
    const meta = live ? shortDate(r.createdAt) : when(r);
    const go = live ? async () => { if (!await this.onRejoin()) { toast('That recording has stopped'); this.changed(); } }
      : () => this.onReview(r);
    const action = live ? 'Go to the recording' : 'Review and save';
    return h('li', { 'data-id': r.id },
      main(r, { class: 'row-main', onclick: go, 'aria-label': `${action}: ${r.title}, ${meta}` },
        r.title,
        h('div', { class: 'row-meta tagged' }, meta, h('span', { class: 'pending-tag' }, live ? '● recording' : r.recovered ? 'not saved · recovered' : 'not saved'))),
      h('div', { class: 'row-actions' },
        quiet(`${action}: ${r.title}`, { 'data-action': live ? 'rejoin' : 'review', onclick: go },
          live ? 'Open' : 'Save…')));
  }

  async play(r, onSpeaker = false, at = 0) {
    try { await openPlayer(r, { onSpeaker, at, onCounted: () => this.changed() }); } catch (e) { toast(e); }
  }

  /// Screen 5.4.3: the edit sheet; a blank title becomes the automatic one.
  edit(r) {
    const form = metadataForm({ title: r.title, notes: r.notes, purpose: r.purpose });
    const error = banner();
    const dialog = modal(null,
      h('div', { class: 'actions', style: 'justify-content: space-between; margin: 0' },
        h('h2', { id: 'dialog-title' }, 'Edit Recording'),
        quiet('Close', { onclick: () => dialog.close() }, '✕')),
      error, form,
      h('div', { class: 'actions' }, h('button', {
        class: 'primary', 'data-action': 'save-changes',
        onclick: async () => {
          try {
            await api.edit(r.id, form.read());
            dialog.close(); toast('Recording updated ✓'); await this.load();
            this.focusRow(r.id, 'edit');
          } catch (e) { error.say(e.message); }
        },
      }, 'SAVE CHANGES')));
    form.querySelector('input').focus();
  }

  async remove(r) {
    if (!await confirmDialog(`Delete '${r.title}'?`, 'This recording will be permanently deleted. This cannot be undone.', 'Delete')) return;
    const index = this.lis().findIndex((e) => e.dataset.id === r.id);
    try {
      await api.remove(r.id); toast('Recording deleted'); await this.load();
      this.focusRow(r.id, 'main', index);   // the row in its place (not its 🗑️)
    } catch (e) { toast(e); }
  }
}
