// Cove's page: the threads of this server, a thread's conversation as its events stream in
// (Server-Sent Events, resumed by the browser with Last-Event-ID), the plan, the
// workspace's files and the agent's browser, and dialogs for what the agent waits for.
// Plain JavaScript; it talks to its own origin only. Text from the agent, the tools and the
// workspace is always put in the page as text (textContent), never as markup.
'use strict';

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const S = {
  threads: [],
  current: null, // thread id
  view: null, // the current thread as GET /v1/threads/{id} shows it
  source: null, // its EventSource
  lastSeq: 0,
  caughtUp: false,
  cards: new Map(), // call id -> tool card
  requests: new Map(), // permission request id -> card
  asks: [], // ask cards, newest last
  assistant: null, // the assistant bubble text streams into
  plan: null,
  planCard: null,
  attachments: [], // uploaded, not sent yet
  dismissed: new Set(), // waiting ids whose dialog the person closed
  dialogFor: null,
  takeoverCards: [],
  takeoverText: null,
  loggedOut: false,
  sending: false, // a task or message on its way
  uploading: 0, // files on their way
  drafts: new Map(), // thread id ('' for a new task) -> {text, attachments} left there
};

// ---------------------------------------------------------------- the API

class ApiFailure extends Error {
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
const KEY_STORE = 'cove.key';
// A key from the address replaces the stored one only once the server takes it: a link from
// anywhere could carry one.
const keyTaken = (async function takeKey() {
  const match = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (!match) return;
  const rest = location.hash.replace(/(^#|&)key=[^&]+/, '$1').replace(/^#&/, '#');
  history.replaceState(null, '', location.pathname + location.search + (rest === '#' ? '' : rest));
  const key = decodeURIComponent(match[1]);
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

function pageKey() {
  return localStorage.getItem(KEY_STORE) || '';
}

/** A path of this server as the page requests it: under its key, where the cookie goes. */
function keyed(path) {
  return '/k/' + encodeURIComponent(pageKey()) + path;
}

async function api(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
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

function threadPath(id, rest) {
  return '/v1/threads/' + encodeURIComponent(id) + (rest || '');
}

/** The session under `key` has ended; the key is let go unless another tab has put a new
 *  one in its place meanwhile. */
function loggedOut(key) {
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

function say(message) {
  const banner = $('banner');
  banner.textContent = message;
  banner.hidden = false;
  clearTimeout(say.timer);
  say.timer = setTimeout(() => {
    if (!S.loggedOut) banner.hidden = true;
  }, 6000);
}

// ---------------------------------------------------------------- text

/** Inline Markdown: `code`, **bold**, [links](https://…); everything else is text. */
function inline(parent, text) {
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\[[^\]]+\]\((https?:\/\/[^)\s]+)\))/g;
  let last = 0;
  let match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) parent.append(text.slice(last, match.index));
    if (match[1]) parent.append(el('code', { text: match[1].slice(1, -1) }));
    else if (match[2]) parent.append(el('strong', { text: match[2].slice(2, -2) }));
    else {
      const label = match[3].slice(1, match[3].indexOf(']'));
      parent.append(el('a', { href: match[4], target: '_blank', rel: 'noopener noreferrer', text: label }));
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) parent.append(text.slice(last));
}

/** A safe subset of Markdown: paragraphs, headings, lists, fenced code. */
function markdown(container, text) {
  container.textContent = '';
  const lines = text.split('\n');
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) {
      const p = el('p');
      paragraph.forEach((line, i) => {
        if (i) p.append(el('br'));
        inline(p, line);
      });
      container.append(p);
      paragraph = [];
    }
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('```')) {
      flush();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith('```')) code.push(lines[i++]);
      container.append(el('pre', {}, el('code', { text: code.join('\n') })));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const h = el(heading[1].length <= 2 ? 'h3' : 'h4');
      inline(h, heading[2]);
      container.append(h);
      continue;
    }
    const item = /^\s*(?:[-*]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      if (paragraph.length) flush();
      const kind = item[1] ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== kind) {
        list = el(kind);
        container.append(list);
      }
      const li = el('li');
      inline(li, item[2]);
      list.append(li);
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    list = null;
    paragraph.push(line);
  }
  flush();
}

function bytes(size) {
  if (size < 1024) return size + ' B';
  if (size < 1024 * 1024) return (size / 1024).toFixed(1) + ' KB';
  return (size / (1024 * 1024)).toFixed(1) + ' MB';
}

// ---------------------------------------------------------------- threads

const STATUS_TEXT = {
  new: 'new',
  running: 'working',
  waiting: 'needs you',
  paused: 'needs you',
  completed: 'done',
  stopped: 'stopped',
  failed: 'failed',
};

function statusOf(view) {
  if (!view) return 'new';
  const open = (view.waiting || []).filter((w) => !w.decision);
  if (open.length) return 'waiting';
  if (view.running) return 'running';
  return view.status;
}

function statusBadge(view) {
  const status = statusOf(view);
  return el('span', { class: 'status ' + status, text: STATUS_TEXT[status] || status });
}

async function loadThreads() {
  if (S.loggedOut) return;
  let list;
  try {
    list = await api('GET', '/v1/threads');
  } catch (e) {
    return;
  }
  S.threads = list.threads;
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

function setView(view) {
  S.view = view;
  const badge = $('thread-status');
  const status = statusOf(view);
  badge.className = 'status ' + status;
  badge.textContent = STATUS_TEXT[status] || status;
  badge.hidden = false;
  $('thread-title').textContent = view.title;
  $('stop').hidden = !view.running;
  $('resume').hidden = view.running || !['stopped', 'failed'].includes(view.status);
  $('delete-thread').hidden = view.running;
  $('takeover').disabled = !view.running;
  $('takeover-why').hidden = view.running;
  updateComposer();
  reconcile();
}

let viewTimer = null;
function refreshView() {
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

function clearTranscript() {
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
  S.caughtUp = false;
  S.dialogFor = null;
  renderPlan();
}

function keepDraft() {
  S.drafts.set(S.current || '', { text: $('composer-text').value, attachments: S.attachments });
}

function takeDraft(id) {
  const draft = S.drafts.get(id || '') || { text: '', attachments: [] };
  $('composer-text').value = draft.text;
  S.attachments = draft.attachments;
  renderAttachments();
}

async function selectThread(id) {
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
    b.setAttribute('aria-current', b.dataset.id === id ? 'true' : 'false');
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
  S.caughtUp = view.last_event === 0;
  // A thread run from the terminal (`cove run`) has no served events: its stored
  // conversation stands in for them. Not for a run the server has just started and not yet
  // told of: its events are on their way and would show everything twice.
  if (view.last_event === 0 && view.status !== 'new' && !view.running) await replayStored(id);
  if (S.current !== id) return;
  S.upTo = view.last_event;
  if (!document.hidden) follow(id);
  loadFiles();
  loadScreenshot();
}

/** Streams the thread's events after the last one shown. The browser resumes a broken
 *  stream by itself (Last-Event-ID); a hidden tab lets its stream go, since a browser
 *  keeps only six connections to a server, shared by all its tabs. */
function follow(id) {
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
async function replayStored(id) {
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

function welcome() {
  return el(
    'div',
    { class: 'welcome', id: 'welcome' },
    el('h2', { text: 'What should the agent do?' }),
    el('p', {
      text: 'It works in its own sandbox with a shell, files and a browser, and tells you what it does as it goes. It asks when it needs you.',
    }),
  );
}

// ---------------------------------------------------------------- the transcript

function scrollDown(force) {
  // While a long thread is read in, one scroll at the end (reading the layout per event
  // would make it quadratic).
  if (!S.caughtUp && !force) return;
  const t = $('transcript');
  const near = t.scrollHeight - t.scrollTop - t.clientHeight < 160;
  if (force || near) t.scrollTop = t.scrollHeight;
}

function add(node) {
  const transcript = $('transcript');
  const waiting = $('thinking');
  if (waiting) transcript.insertBefore(node, waiting);
  else transcript.append(node);
  scrollDown(false);
  return node;
}

/** A sign of life while the model has not said anything yet: from the call to the first
 *  word, tool call or question. */
function thinking(text) {
  let row = $('thinking');
  if (!text) {
    if (row) row.remove();
    return;
  }
  if (!row) {
    row = el('div', { id: 'thinking', class: 'thinking', role: 'status' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), el('span', { class: 'what' }));
    $('transcript').append(row);
  }
  row.lastChild.textContent = text;
  scrollDown(false);
}

/** Events after which the model has shown it is at work, or the run has stopped. */
const ENDS_THINKING = new Set(['assistant_text', 'tool_started', 'ask', 'takeover', 'plan_proposed', 'permission_request', 'complete', 'error', 'thread_run_end']);

/** Tells a screen reader what changed, in a few words (the conversation itself is not a
 *  live region: streamed text would be read out chunk by chunk). */
function announce(text) {
  if (!S.caughtUp) return;
  const live = $('announce');
  live.textContent = '';
  setTimeout(() => (live.textContent = text), 50);
}

function note(text, cls) {
  return add(el('div', { class: 'note' + (cls ? ' ' + cls : ''), text }));
}

function endText() {
  S.assistant = null;
}

let pendingText = null;
function appendText(text) {
  if (!S.assistant) {
    const node = add(el('div', { class: 'msg assistant' }));
    S.assistant = { node, text: '' };
  }
  S.assistant.text += text;
  // One repaint per frame however fast chunks come.
  if (!pendingText) {
    pendingText = requestAnimationFrame(() => {
      pendingText = null;
      if (S.assistant) {
        markdown(S.assistant.node, S.assistant.text);
        scrollDown(false);
      }
    });
  }
}

function flushText() {
  if (pendingText) {
    cancelAnimationFrame(pendingText);
    pendingText = null;
  }
  if (S.assistant) markdown(S.assistant.node, S.assistant.text);
}

function keyArgument(event) {
  if (event.summary) return event.summary;
  const args = event.arguments || {};
  for (const value of Object.values(args)) {
    if (typeof value === 'string') return value;
  }
  return '';
}

function toolCard(event) {
  const state = el('span', { class: 'state' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), ' running');
  const body = el('div', { class: 'body' });
  const args = event.arguments && Object.keys(event.arguments).length
    ? JSON.stringify(event.arguments, null, 2)
    : null;
  if (args) body.append(el('h4', { text: 'Arguments' }), el('pre', { text: args }));
  const card = el(
    'details',
    { class: 'card tool running', 'data-call': event.call_id, 'data-tool': event.tool },
    el(
      'summary',
      {},
      el('span', { class: 'name', text: event.tool }),
      el('span', { class: 'key', text: keyArgument(event) }),
      state,
    ),
    body,
  );
  card.stateNode = state;
  card.bodyNode = body;
  return card;
}

function finishCard(event, ok) {
  let card = S.cards.get(event.call_id);
  if (!card) {
    card = add(toolCard({ call_id: event.call_id, tool: event.tool, arguments: {} }));
    S.cards.set(event.call_id, card);
  }
  card.classList.remove('running', 'waiting');
  card.classList.add(ok ? 'done' : 'failed');
  card.stateNode.textContent = ok ? '✓ done' : '✗ failed';
  const text = ok ? event.output : event.error;
  card.bodyNode.append(el('h4', { text: ok ? 'Result' : 'Error' }), el('pre', { class: 'result', text: text || '(nothing)' }));
  if (event.tool.startsWith('browser_')) {
    const img = el('img', {
      class: 'shot',
      loading: 'lazy',
      alt: 'The browser after ' + event.tool,
      src: keyed(threadPath(S.current, '/screenshots/' + encodeURIComponent(event.run_id) + '/' + encodeURIComponent(event.call_id))),
    });
    img.addEventListener('error', () => img.remove());
    card.bodyNode.append(img);
    if (S.caughtUp) loadScreenshot();
  }
  if (S.caughtUp && !event.tool.startsWith('browser_')) filesChanged();
}

function attentionCard(title, cls) {
  const body = el('div', { class: 'body' });
  const card = el('section', { class: 'card attention ' + (cls || '') }, el('div', { class: 'head' }, el('strong', { text: title })), body);
  card.bodyNode = body;
  return card;
}

function fileLinks(paths) {
  if (!paths || !paths.length) return null;
  return el(
    'ul',
    { class: 'chips' },
    paths.map((p) =>
      el('li', {}, el('button', { type: 'button', class: 'link', text: p, onclick: () => previewFile(p, true) })),
    ),
  );
}

function planList(plan) {
  return el(
    'ol',
    {},
    plan.steps.map((step) =>
      el('li', { class: step.status }, step.description, el('span', { class: 'step-state', text: step.status.replace('_', ' ') })),
    ),
  );
}

const OWN_CARDS = new Set(['ask', 'complete', 'web_browser_takeover', 'create_plan']);

// Every reason a call asks, one per line, as text.
function reasons(why) {
  const list = el('ul', { class: 'reasons muted' });
  for (const line of String(why || '').split('\n')) {
    if (line.trim()) list.append(el('li', { text: line }));
  }
  return list;
}

const DECISIONS = {
  allow_once: 'Allow once',
  allow_for_thread: 'Allow for this thread',
  deny: 'Deny',
};

function render(event) {
  const welcomeNode = $('welcome');
  if (welcomeNode) welcomeNode.remove();
  if (ENDS_THINKING.has(event.type)) thinking(null);
  switch (event.type) {
    case 'thread_run_start':
      endText();
      add(el('div', { class: 'divider', text: 'run started · ' + event.model }));
      break;
    case 'user_message':
      endText();
      // A message Cove wrote for the person (an approval) shows as what they did.
      if (event.says) add(el('div', { class: 'note decision', text: event.says }));
      else add(el('div', { class: 'msg user', text: event.text }));
      break;
    case 'assistant_response_start':
      thinking('Thinking…');
      break;
    case 'llm_retry':
      note('The model call failed (' + event.reason + '); retrying in ' + (event.delay_ms / 1000).toFixed(1) + ' s.');
      thinking('Waiting for the model…');
      break;
    case 'assistant_text':
      appendText(event.text);
      break;
    case 'tool_started': {
      flushText();
      endText();
      // These speak through cards of their own (the question, the plan, the answer).
      if (OWN_CARDS.has(event.tool)) break;
      const card = add(toolCard(event));
      S.cards.set(event.call_id, card);
      break;
    }
    case 'tool_completed':
      if (!OWN_CARDS.has(event.tool)) finishCard(event, true);
      break;
    case 'tool_failed':
      finishCard(event, false);
      break;
    case 'ask': {
      flushText();
      endText();
      const card = add(attentionCard('The agent asks', 'ask'));
      const text = el('div', { class: 'msg assistant' });
      markdown(text, event.text);
      card.bodyNode.append(text);
      const links = fileLinks(event.attachments);
      if (links) card.bodyNode.append(links);
      card.bodyNode.append(
        el('div', { class: 'buttons' }, el('button', { type: 'button', class: 'primary', text: 'Answer', onclick: () => openWaiting('ask') })),
      );
      card.question = event.text;
      S.asks.push(card);
      announce('The agent asks: ' + event.text);
      break;
    }
    case 'takeover': {
      flushText();
      endText();
      const card = add(attentionCard('The agent needs you in its browser', 'takeover'));
      card.bodyNode.append(
        el('p', { text: event.text }),
        el(
          'div',
          { class: 'buttons' },
          el('button', { type: 'button', class: 'primary', text: 'Open the agent’s browser', onclick: (e) => takeover(e.target.parentNode) }),
        ),
        el('p', { class: 'muted', text: 'Press “Done — hand back to the agent” on that page when you are finished, or write to the agent below.' }),
      );
      S.takeoverCards.push(card);
      S.takeoverText = event.text;
      announce('The agent needs you in its browser.');
      break;
    }
    case 'takeover_ended':
      note('The browser is back with the agent (' + event.reason.replace('_', ' ') + ')' + (event.note ? ': ' + event.note : '') + '.');
      for (const card of S.takeoverCards) card.querySelectorAll('button').forEach((b) => (b.disabled = true));
      loadScreenshot();
      break;
    case 'plan_proposed': {
      flushText();
      endText();
      S.plan = event.plan;
      renderPlan();
      const card = add(attentionCard('The agent proposes a plan (version ' + event.plan.version + ')', 'plan'));
      card.bodyNode.append(el('p', {}, el('strong', { text: event.plan.goal })), planList(event.plan));
      card.bodyNode.append(
        el('div', { class: 'buttons' }, el('button', { type: 'button', class: 'primary', text: 'Review the plan', onclick: () => openWaiting('plan') })),
      );
      if (S.planCard) S.planCard.querySelectorAll('button').forEach((b) => (b.disabled = true));
      S.planCard = card;
      announce('The agent proposes a plan.');
      break;
    }
    case 'plan_updated':
      S.plan = event.plan;
      renderPlan();
      if (event.plan.status !== 'proposed' && S.planCard) {
        S.planCard.querySelectorAll('button').forEach((b) => (b.disabled = true));
      }
      if (event.note) note('Plan: ' + event.note);
      break;
    case 'permission_request': {
      flushText();
      endText();
      const tool = S.cards.get(event.call_id);
      if (tool) {
        tool.classList.add('waiting');
        tool.stateNode.textContent = '⏸ waits for you';
      }
      const card = add(attentionCard('Permission needed: ' + event.tool, 'permission'));
      card.bodyNode.append(
        el('p', {}, el('code', { class: 'whole', text: event.summary })),
        reasons(event.why),
      );
      const buttons = el('div', { class: 'buttons' });
      for (const decision of event.decisions) {
        buttons.append(
          el('button', {
            type: 'button',
            class: decision === 'deny' ? 'danger' : decision === 'allow_once' ? 'primary' : '',
            text: DECISIONS[decision] || decision,
            onclick: () => decide(event.request_id, decision),
          }),
        );
      }
      card.bodyNode.append(buttons);
      card.buttons = buttons;
      S.requests.set(event.request_id, card);
      announce('Permission needed: ' + event.summary);
      break;
    }
    case 'permission_decided': {
      const card = S.requests.get(event.request_id);
      if (card) {
        card.buttons.remove();
        card.classList.remove('attention');
        card.bodyNode.append(
          el('p', { class: 'muted', text: (DECISIONS[event.decision] || event.decision) + (event.reason ? ': ' + event.reason : '') }),
        );
      }
      const tool = S.cards.get(event.call_id);
      if (tool && tool.classList.contains('waiting')) {
        tool.classList.remove('waiting');
        tool.stateNode.textContent = event.decision === 'deny' ? '✗ denied' : '… running';
      }
      if (S.dialogFor === event.request_id) closeDialog();
      break;
    }
    case 'mcp_status':
      if (event.status === 'failed') note('MCP server ' + event.server + ' failed: ' + (event.error || ''), 'error');
      break;
    case 'skill_loaded':
      note('Skill loaded: ' + event.name + ' (' + event.files + ' files in ' + event.path + ')');
      break;
    case 'complete': {
      flushText();
      endText();
      const card = add(el('section', { class: 'card final' }));
      const body = el('div', { class: 'body' });
      card.append(el('div', { class: 'head' }, el('strong', { text: '✓ Done' })), body);
      if (event.text) {
        const text = el('div', { class: 'msg assistant' });
        markdown(text, event.text);
        body.append(text);
      }
      const links = fileLinks(event.attachments);
      if (links) body.append(links);
      announce('Done. ' + (event.text || ''));
      break;
    }
    case 'context_compressed':
      note('Older history was shortened to fit the model (' + event.tokens_before + ' → ' + event.tokens_after + ' tokens).');
      break;
    case 'context_summarized':
      note('The model summarized ' + event.messages + ' older messages.');
      break;
    case 'finish':
      flushText();
      break;
    case 'error':
      flushText();
      endText();
      note(event.message, 'error');
      announce('Error: ' + event.message);
      break;
    case 'thread_run_end':
      flushText();
      endText();
      add(el('div', { class: 'divider', text: 'run ended · ' + event.status + spendText(event) }));
      // What the ended run asked of the person can no longer be given to it.
      for (const card of S.takeoverCards) card.querySelectorAll('button').forEach((b) => (b.disabled = true));
      for (const card of S.cards.values()) {
        if (card.classList.contains('running')) {
          card.classList.remove('running');
          card.stateNode.textContent = 'not finished';
        }
      }
      if (S.caughtUp) filesChanged();
      break;
    default:
      break;
  }
  if (S.caughtUp && NEEDS_VIEW.has(event.type)) refreshView();
}

/** What a run's model calls took and cost, as ` · 3 calls · 12,345 tokens in (10,000 cached) · 456 out · $0.0123 · 42.1 s`. */
function spendText(event) {
  const u = event.usage;
  if (!u || !u.calls) return '';
  const n = (x) => Number(x || 0).toLocaleString('en-US');
  let text = ' · ' + u.calls + (u.calls === 1 ? ' call' : ' calls') + ' · ' + n(u.input_tokens) + ' tokens in';
  if (u.cached_tokens) text += ' (' + n(u.cached_tokens) + ' cached)';
  text += ' · ' + n(u.output_tokens) + ' out';
  if (typeof event.cost === 'number') text += ' · $' + event.cost.toFixed(4);
  if (event.duration_ms) text += ' · ' + (event.duration_ms / 1000).toFixed(1) + ' s';
  return text;
}

const NEEDS_VIEW = new Set([
  'thread_run_start',
  'thread_run_end',
  'ask',
  'takeover',
  'takeover_ended',
  'plan_proposed',
  'plan_updated',
  'permission_request',
  'permission_decided',
  'user_message',
  'error',
]);

function renderPlan() {
  const box = $('plan');
  box.textContent = '';
  $('plan-empty').hidden = !!S.plan;
  if (!S.plan) return;
  box.append(
    el('h3', { text: S.plan.goal }),
    el('div', { class: 'plan-status', text: 'version ' + S.plan.version + ' · ' + S.plan.status }),
    planList(S.plan),
  );
}

// ---------------------------------------------------------------- answers and dialogs

async function decide(request, decision, reason) {
  const card = S.requests.get(request);
  if (card && card.buttons) card.buttons.querySelectorAll('button').forEach((b) => (b.disabled = true));
  try {
    await api('POST', threadPath(S.current, '/permissions/' + encodeURIComponent(request)), { decision, reason: reason || undefined });
  } catch (e) {
    if (e.code === 'already_answered') say('That request was answered already (in another tab?).');
    else {
      say(e.message);
      if (card && card.buttons) card.buttons.querySelectorAll('button').forEach((b) => (b.disabled = false));
    }
  }
  if (S.dialogFor === request) closeDialog();
  refreshView();
}

function waitingOpen() {
  return ((S.view && S.view.waiting) || []).filter((w) => !w.decision);
}

/** Keeps the dialog in step with what the thread waits for: opens it for the first thing,
 *  closes it once someone (here or in another tab) has answered. */
function reconcile() {
  if (!S.caughtUp || !S.view) return;
  const open = waitingOpen();
  // A question is answered once the thread no longer waits on one: only the newest can be
  // open.
  const asking = open.some((w) => w.kind === 'ask');
  S.asks.forEach((card, i) => {
    const button = card.querySelector('.buttons button');
    if (!button) return;
    const live = asking && i === S.asks.length - 1;
    button.disabled = !live;
    button.textContent = live ? 'Answer' : 'Answered';
  });
  if (S.dialogFor && !open.some((w) => w.id === S.dialogFor)) {
    closeDialog();
  }
  // Not while the person is writing a message: the next look opens it.
  const typing = document.activeElement === $('composer-text') && $('composer-text').value.trim();
  if (!S.dialogFor && !$('dialog').open && !typing) {
    const next = open.find((w) => !S.dismissed.has(w.id));
    if (next) showDialog(next);
  }
}

function openWaiting(kind) {
  const open = waitingOpen().filter((w) => !kind || w.kind === kind);
  if (!open.length) {
    say('This was answered already.');
    return;
  }
  S.dismissed.delete(open[0].id);
  closeDialog();
  showDialog(open[0]);
}

function closeDialog() {
  const dialog = $('dialog');
  S.dialogFor = null;
  if (dialog.open) dialog.close();
}

/** A dialog button; while its action runs, every button of the dialog waits. */
function dialogButton(text, cls, action) {
  return el('button', {
    type: 'button',
    class: cls,
    text,
    onclick: async () => {
      const buttons = $('dialog-actions').querySelectorAll('button');
      buttons.forEach((b) => (b.disabled = true));
      try {
        await action();
      } finally {
        buttons.forEach((b) => (b.disabled = false));
      }
    },
  });
}

function showDialog(waiting) {
  const dialog = $('dialog');
  const body = $('dialog-body');
  const actions = $('dialog-actions');
  const error = $('dialog-error');
  body.textContent = '';
  actions.textContent = '';
  error.hidden = true;
  S.dialogFor = waiting.id;
  const fail = (e) => {
    if (e.code === 'already_answered' || e.code === 'no_plan_waiting' || e.status === 404) {
      closeDialog();
      say('Someone answered this already (in another tab?).');
      refreshView();
      return;
    }
    error.textContent = e.message;
    error.hidden = false;
  };
  const later = dialogButton('Later', '', () => {
    S.dismissed.add(waiting.id);
    closeDialog();
  });
  if (waiting.kind === 'ask') {
    $('dialog-title').textContent = 'The agent asks';
    const question = el('div', { class: 'msg assistant' });
    markdown(question, waiting.summary);
    const answer = el('textarea', { id: 'dialog-answer', rows: '4', 'aria-label': 'Your answer' });
    body.append(question, answer);
    const send = async () => {
      if (!answer.value.trim()) {
        answer.focus();
        return;
      }
      try {
        await api('POST', threadPath(S.current, '/reply'), { text: answer.value, answers: waiting.id });
        S.dismissed.add(waiting.id);
        closeDialog();
        refreshView();
      } catch (e) {
        fail(e);
      }
    };
    answer.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        send();
      }
    });
    actions.append(later, dialogButton('Send answer', 'primary', send));
  } else if (waiting.kind === 'permission') {
    $('dialog-title').textContent = 'Allow ' + (waiting.tool || 'this call') + '?';
    body.append(el('p', {}, el('code', { class: 'whole', text: waiting.summary })));
    if (waiting.why) body.append(reasons(waiting.why));
    if (waiting.arguments) {
      body.append(el('details', {}, el('summary', { text: 'Arguments' }), el('pre', { text: JSON.stringify(waiting.arguments, null, 2) })));
    }
    const reason = el('textarea', { rows: '2', 'aria-label': 'Why (told to the agent when you deny)', placeholder: 'Why (optional, told to the agent when you deny)' });
    body.append(reason);
    const go = (decision) => async () => {
      try {
        await api('POST', threadPath(S.current, '/permissions/' + encodeURIComponent(waiting.id)), {
          decision,
          reason: reason.value.trim() || undefined,
        });
        closeDialog();
        refreshView();
      } catch (e) {
        fail(e);
      }
    };
    actions.append(
      later,
      el('span', { class: 'spacer' }),
      dialogButton('Deny', 'danger', go('deny')),
      dialogButton('Allow for this thread', '', go('allow_for_thread')),
      dialogButton('Allow once', 'primary', go('allow_once')),
    );
  } else if (waiting.kind === 'plan') {
    $('dialog-title').textContent = 'Approve the plan?';
    if (S.plan) body.append(el('p', {}, el('strong', { text: S.plan.goal })), planList(S.plan));
    else body.append(el('p', { text: waiting.summary }));
    const reason = el('textarea', { rows: '2', 'aria-label': 'What to change', placeholder: 'What should change? (for “Ask for changes”)' });
    body.append(reason);
    const approve = async () => {
      try {
        await api('POST', threadPath(S.current, '/approve'));
        closeDialog();
        refreshView();
      } catch (e) {
        fail(e);
      }
    };
    const reject = (withReason) => async () => {
      if (withReason && !reason.value.trim()) {
        reason.focus();
        error.textContent = 'Say what should change.';
        error.hidden = false;
        return;
      }
      try {
        await api('POST', threadPath(S.current, '/reject'), withReason ? { reason: reason.value.trim() } : {});
        closeDialog();
        refreshView();
      } catch (e) {
        fail(e);
      }
    };
    actions.append(
      later,
      el('span', { class: 'spacer' }),
      dialogButton('Reject', 'danger', reject(false)),
      dialogButton('Ask for changes', '', reject(true)),
      dialogButton('Approve', 'primary', approve),
    );
  } else if (waiting.kind === 'takeover') {
    $('dialog-title').textContent = 'The agent needs you in its browser';
    body.append(el('p', { text: S.takeoverText || waiting.summary }));
    const where = el('div', { class: 'buttons' });
    body.append(where);
    actions.append(
      later,
      dialogButton('Open the agent’s browser', 'primary', () => takeover(where)),
    );
  } else {
    S.dialogFor = null;
    return;
  }
  dialog.showModal();
  const first = body.querySelector('textarea') || actions.querySelector('.primary');
  if (first) first.focus();
}

$('dialog').addEventListener('cancel', () => {
  if (S.dialogFor) S.dismissed.add(S.dialogFor);
  S.dialogFor = null;
});
$('dialog-form').addEventListener('submit', (e) => e.preventDefault());

/** Asks the server for the takeover link and puts it in `where` for the person to open. */
async function takeover(where) {
  if (!S.current) return;
  let link;
  try {
    link = await api('POST', threadPath(S.current, '/takeover'));
  } catch (e) {
    say(e.message);
    return;
  }
  if (!/^https?:\/\//.test(link.url)) {
    say('The sandbox gave a takeover link that is not a web address.');
    return;
  }
  const anchor = el('a', {
    href: link.url,
    target: '_blank',
    rel: 'noopener noreferrer',
    class: 'takeover-link',
    text: 'Open the agent’s browser in a new tab ↗',
  });
  where.textContent = '';
  where.append(anchor);
  if (link.expires_at) where.append(el('span', { class: 'muted', text: ' (until ' + new Date(link.expires_at).toLocaleTimeString() + ')' }));
  where.hidden = false;
  anchor.focus();
}

// ---------------------------------------------------------------- the composer

function updateComposer() {
  const send = $('send');
  const text = $('composer-text');
  const hint = $('composer-hint');
  const planOption = $('plan-option');
  if (!S.current) {
    send.textContent = 'Start';
    send.disabled = S.sending || S.uploading > 0;
    text.disabled = false;
    text.placeholder = 'Describe a task…';
    hint.textContent = '';
    planOption.hidden = false;
    $('options-toggle').hidden = false;
    $('task-options').hidden = !S.optionsOpen;
    return;
  }
  planOption.hidden = true;
  $('options-toggle').hidden = true;
  $('task-options').hidden = true;
  const view = S.view;
  const open = waitingOpen();
  const asks = open.some((w) => w.kind === 'ask');
  const takeoverWait = open.some((w) => w.kind === 'takeover');
  const plan = open.some((w) => w.kind === 'plan');
  let busy = false;
  if (S.sending) {
    busy = true;
    hint.textContent = 'Sending…';
  } else if (S.uploading) {
    busy = true;
    hint.textContent = 'Uploading…';
  } else if (view && view.running && !takeoverWait) {
    busy = true;
    hint.textContent = 'The agent is working. Stop it to write to it.';
  } else if (plan) {
    busy = true;
    hint.textContent = 'Approve or reject the plan first.';
  } else if (asks) {
    hint.textContent = 'Your message answers its question.';
  } else if (takeoverWait) {
    hint.textContent = 'Your message hands the browser back.';
  } else {
    hint.textContent = '';
  }
  send.textContent = asks ? 'Answer' : 'Send';
  send.disabled = busy;
  text.placeholder = busy ? '' : 'Write to the agent…';
}

async function submit() {
  const text = $('composer-text');
  const value = text.value;
  if (!value.trim()) {
    text.focus();
    return;
  }
  if (S.sending || S.uploading) return;
  const id = S.current;
  const sent = S.attachments;
  S.sending = true;
  updateComposer();
  // What was sent leaves the box it was typed in, whichever thread shows now.
  const clear = () => {
    S.drafts.delete(id || '');
    if (S.current === id) {
      if (text.value === value) text.value = '';
      S.attachments = S.attachments.filter((a) => !sent.includes(a));
      renderAttachments();
    }
  };
  try {
    if (!id) {
      const thread = await api('POST', '/v1/threads', {
        task: value,
        plan: $('plan-first').checked,
        model: $('task-model').value.trim() || undefined,
        sandbox: $('task-sandbox').value.trim() || undefined,
        attachments: sent.map((a) => a.id),
      });
      clear();
      // Planning first is asked for each task; the model and the sandbox stay, in sight.
      $('plan-first').checked = false;
      S.sending = false;
      await loadThreads();
      if (!S.current) await selectThread(thread.id);
    } else {
      const ask = waitingOpen().find((w) => w.kind === 'ask');
      await api('POST', threadPath(id, '/reply'), {
        text: value,
        attachments: sent.map((a) => a.id),
        answers: ask ? ask.id : undefined,
      });
      if (ask) S.dismissed.add(ask.id);
      clear();
      refreshView();
    }
  } catch (e) {
    say(e.message);
  } finally {
    S.sending = false;
    updateComposer();
  }
}

function renderAttachments() {
  const ul = $('attached');
  ul.textContent = '';
  for (const file of S.attachments) {
    ul.append(
      el(
        'li',
        {},
        file.name + ' · ' + bytes(file.size),
        el('button', {
          type: 'button',
          'aria-label': 'Remove ' + file.name,
          text: '×',
          onclick: () => {
            S.attachments = S.attachments.filter((a) => a !== file);
            renderAttachments();
          },
        }),
      ),
    );
  }
}

async function upload(files) {
  const id = S.current;
  S.uploading += 1;
  updateComposer();
  for (const file of files) {
    const hint = $('composer-hint');
    hint.textContent = 'Uploading ' + file.name + '…';
    try {
      const response = await fetch(keyed('/v1/uploads?name=' + encodeURIComponent(file.name)), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/octet-stream' },
        body: file,
      });
      const data = await response.json().catch(() => null);
      if (response.status === 401) loggedOut();
      if (!response.ok) throw new Error((data && data.error && data.error.message) || response.statusText);
      // Kept with the thread it was attached in.
      if (S.current === id) {
        S.attachments.push(data);
        renderAttachments();
      } else {
        const draft = S.drafts.get(id || '') || { text: '', attachments: [] };
        draft.attachments.push(data);
        S.drafts.set(id || '', draft);
      }
    } catch (e) {
      say('Cannot attach ' + file.name + ': ' + e.message);
    }
    hint.textContent = '';
  }
  S.uploading -= 1;
  updateComposer();
}

// ---------------------------------------------------------------- files

let filesTimer = null;
function filesChanged() {
  clearTimeout(filesTimer);
  filesTimer = setTimeout(loadFiles, 400);
}

async function loadFiles() {
  const list = $('file-list');
  const empty = $('files-empty');
  if (!S.current) {
    list.textContent = '';
    empty.textContent = 'Pick a thread to see its workspace.';
    empty.hidden = false;
    return;
  }
  if ($('panel-files').hidden) return;
  const id = S.current;
  let listing;
  try {
    listing = await api('GET', threadPath(id, '/files?path=.&depth=6'));
  } catch (e) {
    if (S.current !== id) return;
    list.textContent = '';
    empty.textContent = e.message;
    empty.hidden = false;
    return;
  }
  if (S.current !== id) return;
  const hidden = $('files-hidden').checked;
  const files = listing.entries.filter(
    (f) => !f.is_dir && (hidden || !f.path.split('/').some((part) => part.startsWith('.'))),
  );
  list.textContent = '';
  for (const file of files) {
    list.append(
      el(
        'li',
        {},
        el('button', { type: 'button', title: file.path, text: file.path, onclick: () => previewFile(file.path) }),
        el('span', { class: 'size', text: bytes(file.size) }),
        el('a', {
          href: contentUrl(file.path, true),
          download: file.path.split('/').pop(),
          'aria-label': 'Download ' + file.path,
          text: 'Download',
        }),
      ),
    );
  }
  empty.textContent = files.length ? '' : 'The workspace has no files yet.';
  empty.hidden = files.length > 0;
  if (listing.truncated) list.append(el('li', { class: 'muted', text: 'More files than shown.' }));
}

function contentUrl(path, download) {
  return keyed(threadPath(S.current, '/files/content?path=' + encodeURIComponent(path) + (download ? '&download=true' : '')));
}

const TEXT_TYPES = /\.(txt|md|markdown|csv|tsv|json|jsonl|log|py|rs|js|mjs|ts|tsx|jsx|css|sh|bash|ya?ml|toml|ini|cfg|conf|xml|sql|c|h|cpp|hpp|go|java|kt|rb|php|pl|r|lua|swift|diff|patch|tex|rst|org)$/i;

async function previewFile(path, reveal) {
  if (reveal) selectTab('files');
  const id = S.current;
  const box = $('file-preview');
  box.textContent = '';
  const url = contentUrl(path, false);
  box.append(
    el(
      'div',
      { class: 'preview-head' },
      el('span', { text: path }),
      el('a', { href: contentUrl(path, true), download: path.split('/').pop(), text: 'Download' }),
    ),
  );
  if (/\.(png|jpe?g|gif|webp)$/i.test(path)) {
    box.append(el('img', { src: url, alt: path }));
  } else if (/\.html?$/i.test(path)) {
    // As a browser shows it, with the style sheets and pictures beside it; its own origin,
    // no scripts (the server sends it sandboxed too).
    const view = keyed(threadPath(S.current, '/files/view?path=' + encodeURIComponent(path)));
    box.append(el('iframe', { src: view, sandbox: '', title: 'Preview of ' + path }));
  } else if (/\.svg$/i.test(path)) {
    box.append(el('iframe', { src: url, sandbox: '', title: 'Preview of ' + path }));
  } else if (TEXT_TYPES.test(path) || !/\.[a-z0-9]+$/i.test(path.split('/').pop())) {
    try {
      const response = await fetch(url, { credentials: 'same-origin' });
      if (!response.ok) {
        const data = await response.json().catch(() => null);
        throw new Error((data && data.error && data.error.message) || response.statusText);
      }
      let text = await response.text();
      if (S.current !== id) return;
      const cap = 400000;
      const cut = text.length > cap;
      if (cut) text = text.slice(0, cap);
      box.append(el('pre', { class: 'file-text', text }));
      if (cut) box.append(el('p', { class: 'muted', text: 'Only the beginning is shown; download the file for the rest.' }));
    } catch (e) {
      box.append(el('p', { class: 'error', text: e.message }));
    }
  } else {
    box.append(el('p', { class: 'muted', text: 'No preview for this kind of file; download it.' }));
  }
}

// ---------------------------------------------------------------- the browser

let shotVersion = 0;
function loadScreenshot() {
  const img = $('browser-shot');
  const empty = $('browser-empty');
  if (!S.current) {
    img.hidden = true;
    empty.hidden = false;
    return;
  }
  shotVersion += 1;
  const probe = new Image();
  const id = S.current;
  probe.onload = () => {
    if (S.current !== id) return;
    img.src = probe.src;
    img.hidden = false;
    empty.hidden = true;
  };
  probe.onerror = () => {
    if (S.current !== id) return;
    img.hidden = true;
    empty.hidden = false;
  };
  probe.src = keyed(threadPath(id, '/screenshots/latest?v=' + shotVersion));
}

// ---------------------------------------------------------------- tabs and layout

const TABS = ['plan', 'files', 'browser'];

function selectTab(name) {
  for (const tab of TABS) {
    const selected = tab === name;
    const button = $('tab-' + tab);
    button.setAttribute('aria-selected', selected ? 'true' : 'false');
    button.tabIndex = selected ? 0 : -1;
    $('panel-' + tab).hidden = !selected;
  }
  if (name === 'files') loadFiles();
  if (name === 'browser') loadScreenshot();
}

for (const tab of TABS) {
  const button = $('tab-' + tab);
  button.addEventListener('click', () => selectTab(tab));
  button.addEventListener('keydown', (e) => {
    const i = TABS.indexOf(tab);
    let next = null;
    if (e.key === 'ArrowRight') next = TABS[(i + 1) % TABS.length];
    if (e.key === 'ArrowLeft') next = TABS[(i + TABS.length - 1) % TABS.length];
    if (e.key === 'Home') next = TABS[0];
    if (e.key === 'End') next = TABS[TABS.length - 1];
    if (next) {
      e.preventDefault();
      selectTab(next);
      $('tab-' + next).focus();
    }
  });
}

function toggle(buttonId, panelId) {
  const panel = $(panelId);
  const open = !panel.classList.contains('open');
  panel.classList.toggle('open', open);
  $(buttonId).setAttribute('aria-expanded', open ? 'true' : 'false');
}

$('toggle-threads').addEventListener('click', () => toggle('toggle-threads', 'sidebar'));
$('toggle-side').addEventListener('click', () => toggle('toggle-side', 'side'));
$('close-side').addEventListener('click', () => {
  toggle('toggle-side', 'side');
  $('toggle-side').focus();
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') {
    for (const [button, panel] of [['toggle-threads', 'sidebar'], ['toggle-side', 'side']]) {
      if ($(panel).classList.contains('open')) toggle(button, panel);
    }
  }
});

$('new-thread').addEventListener('click', () => selectThread(null));

/** The options' toggle says what they hold, so a choice never carries over unseen. */
function optionsSummary() {
  const chosen = [$('task-model').value.trim(), $('task-sandbox').value.trim()].filter(Boolean);
  $('options-toggle').textContent = chosen.length ? 'Options · ' + chosen.join(' · ') : 'Options';
}
$('options-toggle').addEventListener('click', () => {
  S.optionsOpen = !S.optionsOpen;
  $('task-options').hidden = !S.optionsOpen;
  $('options-toggle').setAttribute('aria-expanded', S.optionsOpen ? 'true' : 'false');
  if (S.optionsOpen) $('task-model').focus();
});
for (const id of ['task-model', 'task-sandbox']) $(id).addEventListener('input', optionsSummary);
$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  submit();
});
$('composer-text').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    if (!$('send').disabled) submit();
  }
});
$('attach').addEventListener('change', (e) => {
  const files = Array.from(e.target.files || []);
  e.target.value = '';
  upload(files);
});
$('stop').addEventListener('click', async () => {
  try {
    await api('POST', threadPath(S.current, '/stop'));
  } catch (e) {
    say(e.message);
  }
  refreshView();
});
$('resume').addEventListener('click', async () => {
  try {
    await api('POST', threadPath(S.current, '/resume'));
  } catch (e) {
    say(e.message);
  }
  refreshView();
});
$('delete-thread').addEventListener('click', () => {
  const id = S.current;
  if (!id || !S.view) return;
  const dialog = $('dialog');
  if (dialog.open) return;
  $('dialog-title').textContent = 'Delete this thread?';
  $('dialog-body').textContent = '';
  $('dialog-body').append(
    el('p', {}, el('strong', { text: S.view.title })),
    el('p', { text: 'Its conversation, events and pictures are deleted for good. Its workspace’s files stay where they are.' }),
  );
  $('dialog-error').hidden = true;
  $('dialog-actions').textContent = '';
  $('dialog-actions').append(
    dialogButton('Cancel', '', () => dialog.close()),
    el('span', { class: 'spacer' }),
    dialogButton('Delete', 'danger', async () => {
      S.deleting = id;
      try {
        await api('DELETE', threadPath(id));
        dialog.close();
        if (S.current === id) await selectThread(null);
        await loadThreads();
      } catch (e) {
        $('dialog-error').textContent = e.message;
        $('dialog-error').hidden = false;
      } finally {
        S.deleting = null;
      }
    }),
  );
  dialog.showModal();
  $('dialog-actions').querySelector('button').focus();
});
$('files-refresh').addEventListener('click', loadFiles);
$('files-hidden').addEventListener('change', loadFiles);
$('takeover').addEventListener('click', () => {
  const where = $('takeover-link');
  takeover(where);
});

// ---------------------------------------------------------------- start

(async function start() {
  await keyTaken;
  if (!pageKey()) {
    location.replace('/login');
    return;
  }
  await loadThreads();
  const match = /thread=([^&]+)/.exec(location.hash);
  const wanted = match ? decodeURIComponent(match[1]) : null;
  if (wanted && S.threads.some((t) => t.id === wanted)) await selectThread(wanted);
  else selectThread(null);
  // The list (and the open thread's state) stays fresh; the events stream by themselves.
  setInterval(loadThreads, 3000);
})();
