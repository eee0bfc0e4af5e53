// @ts-check
// The server's API as the page calls it: requests under the session's key path, errors
// in the API's envelope, the session ending.

import { $, el } from './dom.js';
import { S } from './state.js';

// ---------------------------------------------------------------- the API

export class ApiFailure extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// ---------------------------------------------------------------- the session

// The session cookie is sent by the browser only under /k/<key>/, a path drawn at login that
// no one else knows: a browser sends a host's cookies to every port of it, where the agent's
// own servers may listen. A login link lands here with the key in the fragment, which no
// request carries; it moves into this origin's storage (other tabs share it) at once.
export const KEY_STORE = 'cove.key';
// A key from the address replaces the stored one only once the server takes it: a link from
// anywhere could carry one.
// key.js took it out of the address as the page began.
export const keyTaken = (async function takeKey() {
  const key = sessionStorage.getItem('cove.offered-key');
  if (!key) return;
  sessionStorage.removeItem('cove.offered-key');
  const stored = localStorage.getItem(KEY_STORE);
  if (key === stored) return;
  const works = (k) =>
    fetch('/k/' + encodeURIComponent(k) + '/v1/threads', { credentials: 'same-origin' })
      .then((r) => r.ok)
      .catch(() => false);
  // With no key yet there is nothing to keep; a working one gives way only to one that works
  // too, or once it stops working itself.
  if (!stored || (await works(key)) || !(await works(stored))) localStorage.setItem(KEY_STORE, key);
})();

export function pageKey() {
  return localStorage.getItem(KEY_STORE) || '';
}

/** A path of this server as the page requests it: under its key, where the cookie goes. */
export function keyed(path) {
  return '/k/' + encodeURIComponent(pageKey()) + path;
}

export async function api(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = {};
  /** @type {RequestInit} */
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  const key = pageKey();
  try {
    response = await fetch(keyed(path), init);
  } catch (e) {
    throw new ApiFailure(0, 'unreachable', 'The server does not answer. Is cove serve still running?');
  }
  if (response.status === 401) loggedOut(key);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiFailure(response.status, error.code || 'failed', error.message || response.statusText);
  }
  return data;
}

export function threadPath(id, rest) {
  return '/v1/threads/' + encodeURIComponent(id) + (rest || '');
}

/** The session under `key` has ended; the key is let go unless another tab has put a new
 *  one in its place meanwhile. */
export function loggedOut(key) {
  if (S.loggedOut) return;
  S.loggedOut = true;
  if (key !== undefined && pageKey() === key) localStorage.removeItem(KEY_STORE);
  const banner = $('banner');
  banner.textContent = '';
  banner.append(
    'Your session has ended (the server may have restarted). Open the login link cove serve printed, or ',
    el('a', { href: '/login' }, 'log in with its API token'),
    '.',
  );
  banner.hidden = false;
  if (S.source) S.source.close();
}

/** When the banner a `say` showed goes away. */
let sayTimer;

export function say(message) {
  const banner = $('banner');
  banner.textContent = message;
  banner.hidden = false;
  clearTimeout(sayTimer);
  sayTimer = setTimeout(() => {
    if (!S.loggedOut) banner.hidden = true;
  }, 6000);
}
