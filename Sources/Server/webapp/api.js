// The one module that talks to recd: JSON over v1/ (the page is served by recd, or through
// `recctl ui`, which forwards every request to recd's socket as the user who ran it).
// Every address is relative to the page's: `recctl ui` serves the app under a secret path of its own
// (/ui-…/), the only place its cookie is sent; recd serves it at /.

export class APIError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code ?? (status === 0 ? 'unreachable' : 'http_' + status);
    this.offer = body?.error?.offer ?? null;
  }
}

/// Whether recd answers, as the page last saw it. A request that reaches it, or an event stream that
/// opens, says yes; one the bridge could not forward (502/504) or that found nobody says no. The page
/// shows its "recd is not reachable" banner from this, and screens stop what only a live recd moves
/// (the recording timer).
const watchers = new Set();
let reachable = true;
export const isReachable = () => reachable;
export function onReachability(fn) { watchers.add(fn); return () => watchers.delete(fn); }
function setReachable(v) {
  if (v === reachable) return;
  reachable = v;
  for (const w of [...watchers]) w(v);
}

// Always these words: the bridge's own message carries the socket error as the OS said it
// ("connect(descriptor:addr:size:): Connection refused (errno: 111)"), which tells a person nothing.
const UNREACHABLE = 'recd is not reachable. Is it running? (recctl status)';

/// `recctl ui` lets a browser in with a cookie, which another site on 127.0.0.1 can make the browser
/// drop (too many cookies for the host: cookies ignore ports). The page the relay's token opened left
/// a secret in this origin's storage, which no other port can read or push out: sent back, it gets
/// the cookie again (docs/webapp.md). recd itself never answers 401, so this is the relay's alone.
async function letInAgain() {
  let secret = null;
  try { secret = localStorage.getItem('recd-ui-renew'); } catch { return false; }
  if (!secret) return false;
  try {
    const r = await fetch('.relay/renew', { method: 'POST', headers: { 'X-Recd-UI-Renew': secret }, credentials: 'same-origin' });
    return r.ok;
  } catch { return false; }
}

export async function call(method, path, body, again = false) {
  let response;
  try {
    response = await fetch('v1' + path, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    setReachable(false);
    throw new APIError(0, { error: { code: 'unreachable', message: UNREACHABLE } });
  }
  if (response.status === 401 && !again && await letInAgain()) return call(method, path, body, true);
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: an error page of the bridge */ }
  if (!response.ok) {
    if (response.status === 502 || response.status === 504) {
      setReachable(false);
      throw new APIError(0, { error: { code: 'unreachable', message: UNREACHABLE } });
    }
    setReachable(true);
    throw new APIError(response.status, json);
  }
  setReachable(true);
  return json;
}

export const api = {
  list: (by, offset, limit = 50, state) => call('GET', `/recordings?by=${by}&limit=${limit}&offset=${offset}${state ? '&state=' + state : ''}`),
  top: () => call('GET', '/top?limit=3'),
  status: () => call('GET', '/status'),
  start: (type, audio) => call('POST', '/record/start', { type, audio }),
  stop: () => call('POST', '/record/stop', { then: 'keep' }),
  pause: () => call('POST', '/record/pause'),
  resume: () => call('POST', '/record/resume'),
  get: (id) => call('GET', `/recordings/${id}`),
  save: (id, meta) => call('POST', `/recordings/${id}/save`, meta),
  discard: (id) => call('POST', `/recordings/${id}/discard`),
  edit: (id, meta) => call('PATCH', `/recordings/${id}`, meta),
  remove: (id) => call('DELETE', `/recordings/${id}`),
  removeAll: () => call('DELETE', '/recordings?confirm=all'),
  played: (id) => call('POST', `/recordings/${id}/played`),
  waveform: (id, pixels) => call('GET', `/recordings/${id}/waveform?pixels=${pixels}`),
  playOnSpeaker: (id, position) => call('POST', `/recordings/${id}/play`, { position }),
  playback: () => call('GET', '/playback'),
  transcript: (id) => call('GET', `/recordings/${id}/transcript`),
  search: (q, limit = 50) => call('GET', `/search?q=${encodeURIComponent(q)}&limit=${limit}`),
  transport: (what, body) => call('POST', `/playback/${what}`, body),
  markers: (id) => call('GET', `/recordings/${id}/markers`),
  mark: (id, body) => call('POST', `/recordings/${id}/markers`, body),
  editMarker: (id, m, body) => call('PATCH', `/recordings/${id}/markers/${m}`, body),
  unmark: (id, m) => call('DELETE', `/recordings/${id}/markers/${m}`),
  media: (id) => `v1/recordings/${id}/media`,
  /// The file as an attachment named after the recording's title (Content-Disposition).
  download: (id) => `v1/recordings/${id}/media?download=true`,
  poster: (id) => `v1/recordings/${id}/poster`,
  exportURL: (format) => `v1/export?format=${format}`,
  backup: () => call('GET', '/backup'),
  backupNow: () => call('POST', '/backup'),
};

/// The event stream (`GET /v1/events`): calls `on(event)` for each; reconnects by itself. It is
/// closed while the tab is hidden, because a browser opens at most 6 connections to one host and
/// each open tab would hold one for good (a 7th tab would never load). `onOpen(first)` is called on
/// every (re)connection: what happened while it was closed is not replayed, so read the state again.
/// When recd goes away the browser's own retry ends at the bridge's 502 (an EventSource gives up on
/// an error status), so the stream is opened again here, with a backoff of 0.5 s doubling to 8 s; a
/// drop is checked at once with a status request, so the page says so within a second or two.
export function events(types, on, onOpen = () => {}) {
  // `first`: the page read its state just now. A tab that loads hidden, or is hidden before the
  // stream opens, may miss changes: its first connection is then not a first.
  let source = null, first = !document.hidden, retry = null, delay = 500, closed = false;
  const open = () => {
    clearTimeout(retry); retry = null;
    const s = source = new EventSource('v1/events?type=' + types.join(','));
    for (const t of types) s.addEventListener(t, (e) => on(JSON.parse(e.data)));
    s.addEventListener('open', () => { delay = 500; setReachable(true); onOpen(first); first = false; });
    s.addEventListener('error', () => {
      if (source !== s) return;
      call('GET', '/status').catch(() => {});   // says whether recd is there (sets the banner)
      first = false;
      if (s.readyState === EventSource.CLOSED) {   // the browser gave up (502): try again later
        source = null;
        retry = setTimeout(() => { if (!closed && !document.hidden) open(); }, delay);
        delay = Math.min(8000, delay * 2);
      }
    });
  };
  const visibility = () => {
    if (document.hidden) { source?.close(); source = null; first = false; } else if (!source) open();
  };
  document.addEventListener('visibilitychange', visibility);
  if (!document.hidden) open();
  return {
    close() {
      closed = true; clearTimeout(retry);
      document.removeEventListener('visibilitychange', visibility); source?.close(); source = null;
    },
  };
}
