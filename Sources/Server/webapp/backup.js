// The Data page's Backups (issue 48), read once, then from recd's events; elements updated in place (the focus stays).

import { api } from './api.js';
import { h, toast, shortDate, busy, count } from './ui.js';

/// Why a run failed (`BackupFailure`); restic's words follow.
const REASONS = {
  'wrong-password': 'Wrong password: the password file does not open the repository.',
  'no-repository': 'There is no repository there yet: recctl backup init makes it.',
  unreachable: 'The repository could not be reached.',
  full: 'The repository is full.',
  locked: 'Another restic holds the repository’s lock.',
  'restic-missing': 'restic is not installed (apt install restic).',
  staging: 'recd could not gather the files to back up (its own disk is full or unreadable).',
  failed: 'restic failed.',
};
const reason = (e) => REASONS[e.reason] ?? e.reason;

function size(bytes) {
  if (!(bytes >= 1000)) return `${bytes ?? 0} B`;
  let v = bytes, i = -1;
  do { v /= 1000; i += 1; } while (v >= 1000 && i < 3);
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${'KMGT'[i]}B`;
}

// The last run that ended: its failure (kept until a success), else its success.
const lastEnd = (s) => s.lastError?.at ?? s.lastSuccess?.finishedAt ?? null;
const lastStart = (s) => s.lastError?.startedAt ?? s.lastSuccess?.startedAt ?? null;

/// Text set only when changed (no churn for screen readers).
const set = (el, text) => { if (el.textContent !== text) el.textContent = text; };

export function backupSection() {
  let seq = 0, asked = null, left = false, s = {};

  const note = h('p', { class: 'hint', 'data-backup': 'note' }, 'Reading the backups’ state…');
  const off = h('p', { 'data-backup': 'off', hidden: true },
    'Backups are off: to back the library up to a restic repository, start recd with ',
    h('code', {}, 'recd --backup REPOSITORY --backup-password-file FILE'), '.');
  const warningText = h('span');
  const warning = h('div', { class: 'notice', 'data-backup': 'warning', hidden: true }, h('strong', {}, 'Warning: '), warningText);
  const errorWhen = h('strong'), errorReason = h('span', { 'data-backup': 'reason' }), errorMessage = h('p', { class: 'message' });
  const error = h('div', { class: 'banner', 'data-backup': 'error', hidden: true }, h('p', {}, errorWhen, ' ', errorReason), errorMessage);

  const label = h('span', { id: 'backup-progress-label' }), percent = h('span', { 'data-backup': 'percent' }), fill = h('div', { class: 'fill' });
  const bar = h('div', { class: 'progress', role: 'progressbar', 'aria-labelledby': 'backup-progress-label',
    'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0 }, fill);
  const runDetail = h('p', { class: 'hint' });
  const running = h('div', { class: 'run', 'data-backup': 'running', hidden: true },
    h('p', {}, label, ' ', percent), bar, runDetail);

  const row = (key, name, dd = h('dd', { 'data-backup': key })) => ({ row: h('div', {}, h('dt', {}, name), dd), dd });
  const repo = row('repository', 'Repository'), last = row('last', 'Last good backup'), next = row('next', 'Next backup'), checked = row('check', 'Last check');
  const facts = h('dl', { class: 'facts', hidden: true }, repo.row, last.row, checked.row, next.row);

  const now = h('button', { class: 'primary', 'data-action': 'backup-now', hidden: true, onclick: () => busy(now, async () => {
    const mine = ++seq;
    try {
      const s = await api.backupNow();
      // the run asked for has ended once another than the one under way has
      asked = { end: lastEnd(s), during: s.running?.startedAt ?? null };
      toast(s.state === 'running' ? 'Another backup will follow the one under way' : 'Backing up…');
      if (mine === seq && !stopped()) show(s);
    } catch (e) { toast(e); refresh(); }
  }) }, 'Back up now');

  const el = h('section', { class: 'card backup', 'aria-labelledby': 'backup-title' },
    h('h2', { id: 'backup-title' }, 'Backups'), note, off, warning, error, running, facts, now);

  function show(v) {
    s = v;
    note.hidden = true;
    el.dataset.state = s.state;
    off.hidden = !(facts.hidden = now.hidden = s.state === 'off');
    warning.hidden = !s.warning;
    set(warningText, s.warning ?? '');

    const e = s.lastError;
    if (!(error.hidden = !e)) {
      set(errorWhen, `The last backup failed (${shortDate(e.at)}):`);
      set(errorReason, reason(e));
      errorReason.dataset.reason = e.reason;
      set(errorMessage, e.message);
    }

    const r = s.state === 'running' && s.running;
    running.hidden = !r;
    // saved, and recd checks the repository
    const checking = r && Date.parse(s.lastSuccess?.startedAt) >= Date.parse(r.startedAt);
    set(label, checking ? 'Checking the repository…' : 'Backing up…');
    bar.hidden = checking;
    if (checking) { set(percent, ''); set(runDetail, 'The backup is saved: restic reads part of it back.'); } else if (r) {
      const pct = Math.max(0, Math.min(100, Math.floor((r.fraction || 0) * 100)));
      set(percent, `${pct}%`);
      fill.style.width = `${pct}%`;
      const files = r.totalFiles > 0 ? `${r.filesDone} of ${count(r.totalFiles, 'file')}` : '';
      bar.setAttribute('aria-valuenow', pct);
      bar.setAttribute('aria-valuetext', `${pct}%` + (files && ', ' + files));
      set(runDetail, files ? `${files} · ${size(r.bytesDone)} of ${size(r.totalBytes)}` : 'Gathering the files…');
    }

    set(repo.dd, s.repository ?? '');
    const ok = s.lastSuccess;
    if (ok && last.dd.dataset.snapshot !== ok.snapshotID) {
      last.dd.dataset.snapshot = ok.snapshotID;
      last.dd.replaceChildren(`${shortDate(ok.finishedAt)} · ${count(ok.recordings, 'recording')} · ${size(ok.totalBytes)}`,
        h('span', { class: 'hint' }, `snapshot ${ok.snapshotID}, ${size(ok.addedBytes)} added`));
    } else if (!ok) {
      delete last.dd.dataset.snapshot;
      set(last.dd, 'No backup yet');
    }
    const c = s.lastCheck;
    if (!(checked.row.hidden = !c)) set(checked.dd, `${shortDate(c.at)}: ${c.ok ? 'no errors found' : `errors found: ${c.message}`}`);
    if (!(next.row.hidden = !s.nextRunAt)) set(next.dd, Date.parse(s.nextRunAt) <= Date.now() ? 'now' : shortDate(s.nextRunAt));

    if (asked && s.state !== 'running' && lastEnd(s) !== asked.end && lastStart(s) !== asked.during) {
      toast(s.lastError ? `Backup failed: ${reason(s.lastError)}` : 'Backed up ✓');
      asked = null;
    }
  }

  /// recd's backup.status (a state: also when a run's backup is saved and its check begins) or .progress.
  function event({ data }) {
    if (stopped() || !(s.state || data.state)) return;
    ++seq;   // (a read under way is older)
    show(data.state ? data : { ...s, state: 'running', running: data, nextRunAt: null });
  }

  async function refresh() {
    if (stopped()) return;
    const mine = ++seq;
    try { const s = await api.backup(); if (mine === seq && !stopped()) show(s); } catch (e) {
      if (mine === seq && !stopped()) { note.hidden = false; set(note, `Could not read the backups’ state: ${e.message}`); }
    }
  }

  function stop() { left = true; }
  // (left without stop(): another screen drew over it)
  function stopped() { if (!left && !el.isConnected) stop(); return left; }

  return { el, refresh, stop, event };
}
