// recd's web app (docs/webapp.md): a module per screen, no build step.

import { api, events, onReachability } from './api.js';
import { h, toast, confirmDialog, screenTitle, quiet } from './ui.js';
import { Library } from './library.js';
import { RecordScreen, chooseMode } from './record.js';
import { closePlayer, markersChanged } from './player.js';
import { backupSection } from './backup.js';
import { ListenScreen, STATES } from './listen.js';

const view = document.getElementById('view');
let screen = 'library', backups = null;   // the Data page's Backups while it is up

const nav = ['data', 'new', 'listen'].map((n) => document.getElementById('nav-' + n)), [navData, navNew, navListen] = nav;

const library = new Library(view, {
  onRecord: newRecording, onReview: review, onRejoin: rejoin, isVisible: () => screen === 'library',
});
const recorder = new RecordScreen(view, {
  onDone: showLibrary,
  onMode: (mode) => screenTitle('Record ' + mode),
  // While a take records, the header leads nowhere else.
  onLive: (live) => { for (const b of nav) b.disabled = live; },
  onBusy: follow,
});
// Listening (issue 49): while armed, said in the header on every screen.
let listening = { state: 'off' };
const listen = new ListenScreen(view, { onReview: review, onBack: showLibrary, onStatus: (s) => {
  listening = s;
  navListen.hidden = !s.armed;
  const [pill = '', line] = STATES[s.state];
  navListen.replaceChildren(h('span', { class: 'rec-mark' }), h('span', {}, ' ' + pill));
  navListen.title = line;
  navListen.setAttribute('aria-label', pill);
  if (screen === 'listen') listen.status(s);
} });

function setScreen(name, title) {
  screen = name;
  if (title) screenTitle(title);
  if (name === 'record') closePlayer();
  backups?.stop(); backups = null;
  if (name !== 'listen') listen.leave();
  for (const b of [navData, navListen]) if (b.id === 'nav-' + name) b.setAttribute('aria-current', 'page'); else b.removeAttribute('aria-current');
}

function showListen() {
  setScreen('listen', 'Listen');
  listen.show(listening);
}

async function showLibrary() {
  setScreen('library', 'Recordings');
  try { await library.load(); } catch (e) { unreachable(e); }
  view.focus();
}

async function newRecording() {
  if (await rejoin()) return;   // one take at a time
  const mode = await chooseMode();
  if (mode === 'listen') return showListen();
  if (!mode) return;
  setScreen('record');
  recorder.show(mode);
}

async function rejoin() {
  const active = (await api.status().catch(() => null))?.active;
  if (active) follow(active);
  return !!active;
}

/// The take in progress on its screen; listening's (a thing said) on Listen.
function follow(active) {
  if (active.recording.id.toLowerCase() === listening.recordingID?.toLowerCase()) {
    toast('Listening is recording what is said: record once it ends');
    return showListen();
  }
  setScreen('record');
  recorder.attach(active);
}

function review(r) {
  setScreen('record');
  recorder.preview(r);   // names the screen
}

/// The export's columns in words, from the file itself: its header line (the rest left unread).
let columns;
const exportColumns = () => columns ??= fetch(api.exportURL('csv')).then(async (r) => {
  if (!r.ok) throw 0;
  const read = r.body.getReader(), d = new TextDecoder();
  let text = '', c;
  while (!text.includes('\r') && !(c = await read.read()).done) text += d.decode(c.value);
  read.cancel();
  return text.split('\r')[0].split(',').map((c) => c.replace(/(Bytes|At|[A-Z]{2,})$/, '').replace(/[A-Z]/g, ' $&').toLowerCase().replace(/^id$/, 'ID'));
});

/// Flow 7: Export Data (7.2), the backups, Delete All Data (7.3).
function showData() {
  setScreen('data', 'Data');
  backups = backupSection();
  let format = 'csv';
  const say = (c = '') => `The metadata of your saved recordings${c}; not the audio files.`, fields = h('span', {}, say());
  exportColumns().then((c) => { fields.textContent = say(': ' + c.join(', ')); }, () => { columns = null; });
  const card = (id, title, text, ...rest) => h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), h('p', { class: 'hint' }, text), ...rest);
  const radio = (value, label) => h('label', {}, h('input', { type: 'radio', name: 'format', value, checked: value === format, onchange: () => { format = value; } }), ' ', label);
  view.replaceChildren(
    card('export-title', 'Export Data', fields,
      h('fieldset', { class: 'radio' }, h('legend', {}, 'Choose format:'), radio('csv', 'CSV'), radio('json', 'JSON')),
      h('button', { class: 'primary', 'data-action': 'export', onclick: async () => {
        // (saved ones only: with none, no file of headers alone)
        try { if (!(await api.list('recent', 0, 1, 'ready')).total) return toast('Nothing to export: there are no saved recordings yet.'); } catch (e) { return toast(e); }
        const a = h('a', { href: api.exportURL(format), download: '' });
        document.body.append(a); a.click(); a.remove();
        toast('Data exported ✓');
      } }, 'Export')),
    backups.el,
    card('delete-title', 'Delete All Data', 'Every recording, file and metadata, at once: all or nothing.',
      h('button', { class: 'danger', 'data-action': 'delete-all', onclick: async () => {
        if (!await confirmDialog('Delete All Data?', 'This will permanently delete all recordings. This cannot be undone.', 'Delete')) return;
        try { closePlayer(); await api.removeAll(); toast('All data deleted'); } catch (e) { toast(e); }
      } }, 'Delete All Data')),
    quiet(null, { onclick: () => showLibrary() }, '← Back to Recordings'));
  backups.refresh();
  view.focus();
}

function unreachable(e) {
  view.replaceChildren(h('div', { class: 'banner', role: 'alert' },
    e.code !== 'unreachable' && h('strong', {}, 'Something went wrong. '),
    e.message, ' ', h('button', { onclick: () => showLibrary() }, 'Try again')));
}

onReachability((up) => {
  document.getElementById('offline').hidden = up;
  if (up && screen === 'library') library.changed();
  if (up && screen === 'data') backups?.refresh();
});

navNew.onclick = newRecording; navData.onclick = showData; navListen.onclick = showListen;
// Escape in a dialog closes only the dialog.
document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !document.getElementById('dialog').open) closePlayer(); });

const refresh = (e) => {
  markersChanged(e?.data?.recordingID);
  if (screen === 'library') library.changed(); else if (screen === 'data') backups?.refresh(); else if (screen === 'listen') listen.changed();
};
const listenRead = () => api.listen().then(listen.onStatus, () => {});
events(['library.changed', 'listen.status', 'backup.status', 'backup.progress'],
  (e) => (e.type === 'listen.status' ? listen.onStatus(e.data) : e.type[0] === 'b' ? backups?.event(e) : refresh(e)),
  (first) => { listenRead(); if (!first) refresh(); });

const sheet = document.getElementById('player');
new ResizeObserver(() => document.documentElement.style.setProperty('--sheet-height', `${sheet.offsetHeight}px`)).observe(sheet);

listenRead().then(rejoin).then((live) => { if (!live) showLibrary(); });
