// @ts-check
// The threads: the list, the open thread's view, following its events.

import { api, keyed, say, threadPath } from './api.js';
import { loadCheckpoints } from './checkpoints.js';
import { renderAttachments, updateComposer } from './composer.js';
import { closeDialog, reconcile } from './dialogs.js';
import { $, el } from './dom.js';
import { loadFiles, loadScreenshot } from './side.js';
import { S } from './state.js';
import { markdown } from './text.js';
import { updateReplay } from './replay.js';
import { add, endText, render, renderPlan, scrollDown } from './transcript.js';

// ---------------------------------------------------------------- threads

export const STATUS_TEXT = {
  new: 'new',
  running: 'working',
  waiting: 'needs you',
  sleeping: 'waiting',
  paused: 'needs you',
  asked: 'asks through its parent',
  completed: 'done',
  stopped: 'stopped',
  failed: 'failed',
};

export function statusOf(view) {
  if (!view) return 'new';
  const open = (view.waiting || []).filter((w) => !w.decision);
  if (open.length) return 'waiting';
  if (view.running && view.waiting_for) return 'sleeping';
  if (view.running) return 'running';
  // A sub-agent paused on its question: the person answers it on the parent's thread.
  if (view.parent_id && view.status === 'paused') return 'asked';
  return view.status;
}

export function statusBadge(view) {
  const status = statusOf(view);
  return el('span', { class: 'status ' + status, text: STATUS_TEXT[status] || status });
}

export async function loadThreads() {
  if (S.loggedOut) return;
  let list;
  try {
    list = await api('GET', '/v1/threads');
  } catch (e) {
    return;
  }
  // Each sub-agent's thread right after its parent's, indented.
  const byParent = new Map();
  for (const t of list.threads) {
    if (t.parent_id && list.threads.some((p) => p.id === t.parent_id)) {
      if (!byParent.has(t.parent_id)) byParent.set(t.parent_id, []);
      byParent.get(t.parent_id).push(t);
    }
  }
  const ordered = [];
  const place = (t) => {
    ordered.push(t);
    for (const child of (byParent.get(t.id) || []).sort((a, b) => a.created_at - b.created_at)) place(child);
  };
  for (const t of list.threads) if (!(t.parent_id && list.threads.some((p) => p.id === t.parent_id))) place(t);
  S.threads = ordered;
  // Updated in place: focus and a screen reader's place in the list stay where they are.
  const ul = $('threads');
  const items = new Map(Array.from(ul.children).map((li) => [li.dataset.id, li]));
  let before = ul.firstChild;
  for (const thread of S.threads) {
    let li = items.get(thread.id);
    items.delete(thread.id);
    if (!li) {
      li = el(
        'li',
        { 'data-id': thread.id },
        el(
          'button',
          { type: 'button', 'data-id': thread.id, onclick: () => selectThread(thread.id) },
          el('span', { class: 'title' }),
          el('span', { class: 'status' }),
        ),
      );
    }
    li.classList.toggle('child', !!thread.parent_id);
    const button = li.firstChild;
    button.setAttribute('aria-current', thread.id === S.current ? 'true' : 'false');
    const [title, badge] = button.children;
    if (title.textContent !== thread.title) title.textContent = thread.title;
    const status = statusOf(thread);
    badge.className = 'status ' + status;
    badge.textContent = STATUS_TEXT[status] || status;
    if (li !== before) ul.insertBefore(li, before);
    before = li.nextSibling;
  }
  for (const gone of items.values()) gone.remove();
  $('no-threads').hidden = S.threads.length > 0;
  const mine = S.threads.find((t) => t.id === S.current);
  if (mine) setView(mine);
  else if (S.current && !S.deleting) {
    // Deleted elsewhere (another tab, another client).
    say('This thread was deleted.');
    selectThread(null);
  }
}

/** Shows the open thread as the API describes it.
 * @param {import('./protocol').ThreadView} view */
export function setView(view) {
  S.view = view;
  const badge = $('thread-status');
  const status = statusOf(view);
  badge.className = 'status ' + status;
  badge.textContent = STATUS_TEXT[status] || status;
  badge.hidden = false;
  $('thread-title').textContent = view.title;
  showWaitingFor();
  $('stop').hidden = !view.running;
  $('resume').hidden = view.running || !['stopped', 'failed'].includes(view.status);
  $('delete-thread').hidden = view.running;
  $('takeover').disabled = !view.running;
  $('takeover-why').hidden = view.running;
  updateComposer();
  reconcile();
  updateReplay();
}

/** A span of seconds as people say it: `45 s`, `3 min`, `2 h 5 min`. */
export function durationWords(secs) {
  if (secs < 60) return secs + ' s';
  if (secs < 3600) return Math.floor(secs / 60) + ' min';
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  return m ? h + ' h ' + m + ' min' : h + ' h';
}

let waitingTimer = null;
/** "waiting for: tests to finish (2 min)" beside the status while the run waits for its
 *  watches, the time counting on; the run wakes by itself. */
function showWaitingFor() {
  clearInterval(waitingTimer);
  const line = $('thread-waiting-for');
  const wait = S.view && S.view.running ? S.view.waiting_for : null;
  line.hidden = !wait;
  if (!wait) return;
  const draw = () => {
    const secs = Math.max(0, Math.floor((Date.now() - wait.since) / 1000));
    line.textContent = 'waiting for: ' + wait.summary + ' (' + durationWords(secs) + ')';
  };
  draw();
  waitingTimer = setInterval(draw, 5000);
}

export let viewTimer = null;
export function refreshView() {
  clearTimeout(viewTimer);
  viewTimer = setTimeout(async () => {
    if (!S.current) return;
    const id = S.current;
    try {
      const view = await api('GET', threadPath(id));
      if (S.current === id) setView(view);
    } catch (e) {
      /* the next poll tries again */
    }
    loadThreads();
  }, 80);
}

export function clearTranscript() {
  const transcript = $('transcript');
  transcript.textContent = '';
  S.cards.clear();
  S.requests.clear();
  S.asks = [];
  S.takeoverCards = [];
  S.takeoverText = null;
  S.assistant = null;
  S.plan = null;
  S.planCard = null;
  S.lastSeq = 0;
  S.step = 0;
  S.caughtUp = false;
  S.checkpoints = [];
  S.dialogFor = null;
  renderPlan();
}

export function keepDraft() {
  S.drafts.set(S.current || '', { text: $('composer-text').value, attachments: S.attachments });
}

export function takeDraft(id) {
  const draft = S.drafts.get(id || '') || { text: '', attachments: [] };
  $('composer-text').value = draft.text;
  S.attachments = draft.attachments;
  renderAttachments();
}

export async function selectThread(id) {
  if (S.source) {
    S.source.close();
    S.source = null;
  }
  closeDialog();
  keepDraft();
  S.current = id;
  takeDraft(id);
  S.view = null;
  history.replaceState(null, '', id ? '#thread=' + encodeURIComponent(id) : '#');
  $('sidebar').classList.remove('open');
  $('toggle-threads').setAttribute('aria-expanded', 'false');
  for (const b of document.querySelectorAll('#threads button')) {
    b.setAttribute('aria-current', b.getAttribute('data-id') === id ? 'true' : 'false');
  }
  clearTranscript();
  $('file-preview').textContent = '';
  $('takeover-link').hidden = true;
  if (!id) {
    $('transcript').append(welcome());
    $('thread-title').textContent = 'New task';
    $('thread-status').hidden = true;
    $('stop').hidden = true;
    $('resume').hidden = true;
    $('delete-thread').hidden = true;
    $('download').hidden = true;
    updateComposer();
    loadFiles();
    loadScreenshot();
    $('composer-text').focus();
    return;
  }
  let view;
  try {
    view = await api('GET', threadPath(id));
  } catch (e) {
    say(e.message);
    return;
  }
  if (S.current !== id) return;
  setView(view);
  const download = /** @type {HTMLAnchorElement} */ ($('download'));
  download.href = keyed(threadPath(id, '/export'));
  download.hidden = false;
  S.caughtUp = view.last_event === 0;
  // A thread run from the terminal (`cove run`) has no served events: its stored
  // conversation stands in for them. Not for a run the server has just started and not yet
  // told of: its events are on their way and would show everything twice.
  if (view.last_event === 0 && view.status !== 'new' && !view.running) await replayStored(id);
  if (S.current !== id) return;
  updateReplay();
  S.upTo = view.last_event;
  if (!document.hidden) follow(id);
  loadCheckpoints(id);
  loadFiles();
  loadScreenshot();
}

/** Streams the thread's events after the last one shown. The browser resumes a broken
 *  stream by itself (Last-Event-ID); a hidden tab lets its stream go, since a browser
 *  keeps only six connections to a server, shared by all its tabs. */
export function follow(id) {
  if (S.source) S.source.close();
  const source = new EventSource(keyed(threadPath(id, '/events?after=' + S.lastSeq)));
  S.source = source;
  source.onmessage = (message) => {
    if (S.source !== source) return;
    const seq = Number(message.lastEventId);
    // An event shown already is never shown twice.
    if (!(seq > S.lastSeq)) return;
    S.lastSeq = seq;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (e) {
      return;
    }
    render(event);
    if (!S.caughtUp && seq >= S.upTo) {
      S.caughtUp = true;
      refreshView();
      scrollDown(true);
      updateReplay();
    }
  };
  source.onerror = () => {
    // The browser reconnects by itself; a lost session shows here first.
    if (S.source === source) api('GET', threadPath(id)).catch(() => {});
  };
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) {
    if (S.source) {
      S.source.close();
      S.source = null;
    }
  } else if (S.current && !S.source && !S.loggedOut) {
    follow(S.current);
    refreshView();
  }
});

/** Shows a thread's stored messages: its runs' events, the agent's text and, for threads
 *  older than the user_message event, the person's messages. */
export async function replayStored(id) {
  let list;
  try {
    list = await api('GET', threadPath(id, '/messages'));
  } catch (e) {
    return;
  }
  if (S.current !== id) return;
  const stored = list.messages;
  const told = stored.some((m) => m.kind === 'status' && m.content && m.content.type === 'user_message');
  const textOf = (m) =>
    (m.content.content || [])
      .filter((part) => part.type === 'text')
      .map((part) => part.text)
      .join('');
  // An answer is stored after the calls it made: its text goes where it began.
  let slot = null;
  for (const m of stored) {
    if (m.kind === 'status' && m.content && m.content.type) {
      if (m.content.type === 'assistant_response_start') {
        if (slot && !slot.textContent) slot.remove();
        slot = add(el('div', { class: 'msg assistant' }));
      }
      render(m.content);
    } else if (m.kind === 'assistant') {
      const text = textOf(m).replace(/<function_calls>[\s\S]*?(<\/function_calls>|$)/g, '').trim();
      if (!text) continue;
      const node = slot || add(el('div', { class: 'msg assistant' }));
      markdown(node, text);
      slot = null;
    } else if (m.kind === 'user' && !told) {
      const text = textOf(m);
      if (text && !text.startsWith('<function_results>')) add(el('div', { class: 'msg user', text }));
    }
  }
  if (slot && !slot.textContent) slot.remove();
  endText();
}

export function welcome() {
  return el(
    'div',
    { class: 'welcome', id: 'welcome' },
    el('h2', { text: 'What should the agent do?' }),
    el('p', {
      text: 'It works in its own sandbox with a shell, files and a browser, and tells you what it does as it goes. It asks when it needs you.',
    }),
  );
}
