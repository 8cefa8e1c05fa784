// recd's web app on its /v1 API (docs/webapp.md). No build step: standard modules, one per screen.

import { api, events, onReachability } from './api.js';
import { h, toast, confirmDialog, screenTitle } from './ui.js';
import { Library } from './library.js';
import { RecordScreen, chooseMode } from './record.js';
import { closePlayer, markersChanged } from './player.js';
import { backupSection } from './backup.js';

const view = document.getElementById('view');
let screen = 'library';
let backups = null;   // the Data page's Backups section while it is up (it polls during a run)
const offline = document.getElementById('offline');

const nav = [document.getElementById('nav-data'), document.getElementById('nav-new')], [navData, navNew] = nav;

const library = new Library(view, {
  onRecord: () => newRecording(), onReview: (r) => review(r), onRejoin: () => rejoin(), isVisible: () => screen === 'library',
});
const recorder = new RecordScreen(view, {
  onDone: () => showLibrary(),
  onMode: (mode) => screenTitle(mode === 'video' ? 'Record video' : 'Record audio'),
  // While a take records, the header leads nowhere else (as ✕).
  onLive: (live) => { for (const b of nav) b.disabled = live; },
});

function setScreen(name) {
  screen = name;
  backups?.stop(); backups = null;   // a screen left stops its section's reads
  if (name === 'data') navData.setAttribute('aria-current', 'page'); else navData.removeAttribute('aria-current');
}

async function showLibrary() {
  setScreen('library');
  screenTitle('Recordings');
  try { await library.show(); } catch (e) { unreachable(e); }
  view.focus();
}

async function newRecording() {
  if (await rejoin()) return;   // recd records one take at a time: the one in progress comes first
  const mode = await chooseMode();
  if (!mode) return;
  closePlayer();
  setScreen('record');
  recorder.show(mode);
}

/// The take in progress (this page's, or another client's) on its screen; true if one.
async function rejoin() {
  const active = (await api.status().catch(() => null))?.active;
  if (!active) return false;
  closePlayer();
  setScreen('record');
  recorder.attach(active);
  return true;
}

function review(r) {
  closePlayer();
  setScreen('record');
  recorder.preview(r);   // names the screen
}

/// Flow 7: Export Data (7.2), the backups (issue 48), Delete All Data (7.3).
function showData() {
  setScreen('data');
  screenTitle('Data');
  backups = backupSection();
  let format = 'csv';
  const radio = (value, label) => h('label', {}, h('input', {
    type: 'radio', name: 'format', value, checked: value === format ? true : undefined, onchange: () => { format = value; },
  }), ' ', label);
  view.replaceChildren(
    h('section', { class: 'card', 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title' }, 'Export Data'),
      h('p', { class: 'hint' }, 'The metadata of your saved recordings (title, timestamp, duration, type, purpose, play count); not the files.'),
      h('fieldset', { class: 'radio', style: 'border: 0; padding: 0' }, h('legend', {}, 'Choose format:'), radio('csv', 'CSV'), radio('json', 'JSON')),
      h('button', { class: 'primary', 'data-action': 'export', onclick: async () => {
        // Saved recordings only: with none, no file of headers alone.
        let saved;
        try { saved = (await api.list('recent', 0, 1, 'ready')).total; } catch (e) { toast(e.message); return; }
        if (saved === 0) { toast('Nothing to export: there are no saved recordings yet.'); return; }
        const a = h('a', { href: api.exportURL(format), download: '' });
        document.body.append(a); a.click(); a.remove();
        toast('Data exported ✓');
      } }, 'Export')),
    backups.el,
    h('section', { class: 'card', 'aria-labelledby': 'delete-title' },
      h('h2', { id: 'delete-title' }, 'Delete All Data'),
      h('p', { class: 'hint' }, 'Every recording, file and metadata, at once: all or nothing.'),
      h('button', { class: 'danger', 'data-action': 'delete-all', onclick: async () => {
        if (!await confirmDialog('Delete All Data?', 'This will permanently delete all recordings. This cannot be undone.', 'Delete')) return;
        try { closePlayer(); await api.removeAll(); toast('All data deleted'); } catch (e) { toast(e.message); }
      } }, 'Delete All Data')),
    h('button', { class: 'quiet', onclick: () => showLibrary() }, '← Back to Recordings'));
  backups.refresh();
  view.focus();
}

function unreachable(e) {
  view.replaceChildren(h('div', { class: 'banner', role: 'alert' },
    // An unreachable recd's message says so itself.
    ...(e.code === 'unreachable' ? [] : [h('strong', {}, 'Something went wrong. ')]),
    e.message, ' ', h('button', { onclick: () => showLibrary() }, 'Try again')));
}

// recd gone: said atop every screen until it answers again.
onReachability((up) => {
  offline.hidden = up;
  if (up && screen === 'library') library.changed();
  if (up && screen === 'data') backups?.refresh();
});

navNew.addEventListener('click', () => newRecording());
navData.addEventListener('click', () => showData());
// Escape in a dialog (a trim's confirmation) closes only the dialog.
document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !document.getElementById('dialog').open) closePlayer(); });

// Changes made elsewhere show without a reload.
const refresh = (e) => { markersChanged(e?.data?.recordingID); if (screen === 'library') library.changed(); else if (screen === 'data') backups?.refresh(); };
events(['library.changed'], refresh, (first) => { if (!first) refresh(); });

// The page keeps room for the player sheet over its end, however tall.
const sheet = document.getElementById('player');
new ResizeObserver(() => document.documentElement.style.setProperty('--sheet-height', `${sheet.offsetHeight}px`)).observe(sheet);

rejoin().then((live) => { if (!live) showLibrary(); });
