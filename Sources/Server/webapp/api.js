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

export async function call(method, path, body) {
  let response;
  try {
    response = await fetch('v1' + path, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    throw new APIError(0, { error: { code: 'unreachable', message: 'recd is not reachable. Is it running? (recctl status)' } });
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: an error page of the bridge */ }
  if (!response.ok) {
    if (response.status === 502 || response.status === 504) {
      throw new APIError(0, { error: { code: 'unreachable', message: json?.error?.message ?? 'recd is not reachable. Is it running?' } });
    }
    throw new APIError(response.status, json);
  }
  return json;
}

export const api = {
  list: (by, offset, limit = 50) => call('GET', `/recordings?by=${by}&limit=${limit}&offset=${offset}`),
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
  transport: (what, body) => call('POST', `/playback/${what}`, body),
  media: (id) => `v1/recordings/${id}/media`,
  poster: (id) => `v1/recordings/${id}/poster`,
  exportURL: (format) => `v1/export?format=${format}`,
};

/// The event stream (`GET /v1/events`): calls `on(event)` for each; reconnects by itself. It is
/// closed while the tab is hidden, because a browser opens at most 6 connections to one host and
/// each open tab would hold one for good (a 7th tab would never load). `onOpen(first)` is called on
/// every (re)connection: what happened while it was closed is not replayed, so read the state again.
export function events(types, on, onOpen = () => {}) {
  // `first`: the page read its state just now. A tab that loads hidden, or is hidden before the
  // stream opens, may miss changes: its first connection is then not a first.
  let source = null, first = !document.hidden;
  const open = () => {
    source = new EventSource('v1/events?type=' + types.join(','));
    for (const t of types) source.addEventListener(t, (e) => on(JSON.parse(e.data)));
    source.addEventListener('open', () => { onOpen(first); first = false; });
  };
  const visibility = () => {
    if (document.hidden) { source?.close(); source = null; first = false; } else if (!source) open();
  };
  document.addEventListener('visibilitychange', visibility);
  if (!document.hidden) open();
  return {
    close() { document.removeEventListener('visibilitychange', visibility); source?.close(); source = null; },
  };
}
