// recd's web app: the seed's Recordings screens (Flow 5), Quick Play, and Flow 7's export and
// Delete All Data, on top of recd's /v1 API. No build step: standard modules, one per screen.

import { api, events } from './api.js';
import { h, toast, confirmDialog } from './ui.js';
import { Library } from './library.js';
import { RecordScreen, chooseMode } from './record.js';
import { closePlayer } from './player.js';

const view = document.getElementById('view');
const title = document.getElementById('title');
let screen = 'library';

const library = new Library(view, { onRecord: () => newRecording(), isVisible: () => screen === 'library' });
const recorder = new RecordScreen(view, { onDone: () => showLibrary() });

async function showLibrary() {
  screen = 'library';
  title.textContent = 'Recordings';
  try { await library.show(); } catch (e) { unreachable(e); }
  view.focus();
}

async function newRecording() {
  const mode = await chooseMode();
  if (!mode) return;
  closePlayer();
  screen = 'record';
  title.textContent = mode === 'video' ? 'Record video' : 'Record audio';
  recorder.show(mode);
}

/// Flow 7: Export Data (7.2) as a download, and Delete All Data (7.3).
function showData() {
  screen = 'data';
  title.textContent = 'Data';
  let format = 'csv';
  const radio = (value, label) => h('label', {}, h('input', {
    type: 'radio', name: 'format', value, checked: value === format ? true : undefined, onchange: () => { format = value; },
  }), ' ', label);
  view.replaceChildren(
    h('section', { class: 'card', 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title' }, 'Export Data'),
      h('p', { class: 'hint' }, 'The metadata of your saved recordings (title, timestamp, duration, type, purpose, play count); not the files.'),
      h('fieldset', { class: 'radio', style: 'border: 0; padding: 0' }, h('legend', {}, 'Choose format:'), radio('csv', 'CSV'), radio('json', 'JSON')),
      h('button', { type: 'button', class: 'primary', 'data-action': 'export', onclick: () => {
        const a = h('a', { href: api.exportURL(format), download: '' });
        document.body.append(a); a.click(); a.remove();
        toast('Data exported ✓');
      } }, 'Export')),
    h('section', { class: 'card', 'aria-labelledby': 'delete-title' },
      h('h2', { id: 'delete-title' }, 'Delete All Data'),
      h('p', { class: 'hint' }, 'Every recording, file and metadata, at once: all or nothing.'),
      h('button', { type: 'button', class: 'danger', 'data-action': 'delete-all', onclick: async () => {
        if (!await confirmDialog('Delete All Data?', 'This will permanently delete all recordings. This cannot be undone.', 'Delete')) return;
        try { closePlayer(); await api.removeAll(); toast('All data deleted'); } catch (e) { toast(e.message); }
      } }, 'Delete All Data')),
    h('button', { type: 'button', class: 'quiet', onclick: () => showLibrary() }, '← Back to Recordings'));
  view.focus();
}

function unreachable(e) {
  view.replaceChildren(h('div', { class: 'banner', role: 'alert' },
    h('strong', {}, e.code === 'unreachable' ? 'recd is not reachable. ' : 'Something went wrong. '),
    e.message, ' ', h('button', { type: 'button', onclick: () => showLibrary() }, 'Try again')));
}

document.getElementById('nav-new').addEventListener('click', () => newRecording());
document.getElementById('nav-data').addEventListener('click', () => showData());
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closePlayer(); });

// Changes made elsewhere (recctl, another browser) show without a reload.
events(['library.changed'], () => { if (screen === 'library') library.changed(); });
showLibrary();
