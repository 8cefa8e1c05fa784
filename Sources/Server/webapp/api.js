// The one module that talks to recd; addresses relative (`recctl ui` serves the app under a secret path).

class APIError extends Error {
  constructor(status, body, e = body?.error) {
    super(e?.message ?? `HTTP ${status}`);
    Object.assign(this, { status, code: e?.code ?? (status ? 'http_' + status : 'unreachable'), offer: e?.offer ?? null });
  }
}

/// Whether recd answered last (not the bridge's 502/504).
const watchers = new Set();
let reachable = true;
export const isReachable = () => reachable;
export function onReachability(fn) { watchers.add(fn); return () => watchers.delete(fn); }
function setReachable(v) { if (v !== reachable) for (const w of [...watchers]) w(reachable = v); }

const away = () => { setReachable(false); return new APIError(0, { error: { message: 'recd is not reachable. Is it running? (recctl status)' } }); };

/// The relay's cookie got again (docs/webapp.md); only it answers 401.
async function letInAgain() {
  try {
    const secret = localStorage.getItem('recd-ui-renew');
    return !!secret && (await fetch('.relay/renew', { method: 'POST', headers: { 'X-Recd-UI-Renew': secret } })).ok;
  } catch { return false; }
}

export async function call(method, path, body, again = false) {
  let r, json = null;
  try { r = await fetch('v1' + path, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body && JSON.stringify(body) }); } catch { throw away(); }
  if (r.status === 401 && !again && await letInAgain()) return call(method, path, body, true);
  try { json = JSON.parse(await r.text()); } catch { /* empty, or the bridge's page */ }
  if (r.status === 502 || r.status === 504) throw away();
  setReachable(true);
  if (!r.ok) throw new APIError(r.status, json);
  return json;
}

const get = (path) => call('GET', path), post = (path, body) => call('POST', path, body), R = (id, p = '') => `/recordings/${id}${p}`;
export const api = {
  list: (by, offset, limit = 50, state) => get(`/recordings?by=${by}&limit=${limit}&offset=${offset}${state ? '&state=' + state : ''}`),
  top: () => get('/top?limit=3'),
  status: () => get('/status'),
  start: (type, audio) => post('/record/start', { type, audio }),
  stop: () => post('/record/stop', { then: 'keep' }),
  pause: () => post('/record/pause'),
  resume: () => post('/record/resume'),
  get: (id) => get(R(id)),
  save: (id, meta) => post(R(id, '/save'), meta),
  discard: (id) => post(R(id, '/discard')),
  edit: (id, meta) => call('PATCH', R(id), meta),
  remove: (id) => call('DELETE', R(id)),
  removeAll: () => call('DELETE', '/recordings?confirm=all'),
  played: (id) => post(R(id, '/played')),
  waveform: (id, pixels) => get(R(id, '/waveform?pixels=' + pixels)),
  playOnSpeaker: (id, position, skipSilence, speed) => post(R(id, '/play'), { position, skipSilence, speed }),
  silences: (id) => get(R(id, '/silences')),
  playback: () => get('/playback'),
  transcript: (id) => get(R(id, '/transcript')),
  search: (q, limit = 50) => get(`/search?q=${encodeURIComponent(q)}&limit=${limit}`),
  transport: (what, body) => post(`/playback/${what}`, body),
  markers: (id) => get(R(id, '/markers')),
  mark: (id, body) => post(R(id, '/markers'), body),
  editMarker: (id, m, body) => call('PATCH', R(id, `/markers/${m}`), body),
  trim: (id, body) => post(R(id, '/trim'), body),
  unmark: (id, m) => call('DELETE', R(id, `/markers/${m}`)),
  enhanced: (id, method = 'GET') => call(method, R(id, '/enhanced')),
  // `e`: the enhanced copy; ?v: the size, which a trim in place changes (the browser's cache).
  media: (r, e) => `v1/recordings/${r.id}/${e ? 'enhanced/' : ''}media?v=${(e || r).sizeBytes}`,
  download: (r, e) => `${api.media(r, e)}&download=true`,
  poster: (id) => `v1/recordings/${id}/poster`,
  exportURL: (format) => `v1/export?format=${format}`,
  backup: () => get('/backup'),
  backupNow: () => post('/backup'),
  listen: () => get('/listen'),
  listenStart: (body) => post('/listen', body),
  listenStop: () => call('DELETE', '/listen'),
};

/// `GET /v1/events`, closed while the tab is hidden (6 connections a host); `onOpen(first)` on each
/// (re)connection (`first`: the page read its state just now); again after a 502.
export function events(types, on, onOpen = () => {}) {
  let source = null, first = !document.hidden, retry = null, delay = 500, closed = false;
  const open = () => {
    clearTimeout(retry); retry = null;
    const s = source = new EventSource('v1/events?type=' + types.join(','));
    for (const t of types) s.addEventListener(t, (e) => on(JSON.parse(e.data)));
    s.addEventListener('open', () => { delay = 500; setReachable(true); onOpen(first); first = false; });
    s.addEventListener('error', () => {
      if (source !== s) return;
      get('/status').catch(() => {});   // (sets the banner)
      first = false;
      if (s.readyState === EventSource.CLOSED) {   // the browser gave up (502)
        source = null;
        retry = setTimeout(() => { if (!closed && !document.hidden) open(); }, delay);
        delay = Math.min(8000, delay * 2);
      }
    });
  };
  const visibility = () => { if (document.hidden) { source?.close(); source = null; first = false; } else if (!source) open(); };
  document.addEventListener('visibilitychange', visibility);
  if (!document.hidden) open();
  return { close() { closed = true; clearTimeout(retry); document.removeEventListener('visibilitychange', visibility); source?.close(); source = null; } };
}
