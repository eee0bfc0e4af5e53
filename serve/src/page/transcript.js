// @ts-check
// The conversation as its events arrive: text, tool cards, plans, requests, the end.

import { keyed, threadPath } from './api.js';
import { decorateTurns, loadCheckpoints } from './checkpoints.js';
import { closeDialog, decide, openWaiting, takeover } from './dialogs.js';
import { $, el } from './dom.js';
import { filesChanged, loadScreenshot, previewFile } from './side.js';
import { S } from './state.js';
import { markdown } from './text.js';
import { refreshView, selectThread } from './threads.js';

// ---------------------------------------------------------------- the transcript

export function scrollDown(force) {
  // While a long thread is read in, one scroll at the end (reading the layout per event
  // would make it quadratic).
  if (!S.caughtUp && !force) return;
  const t = $('transcript');
  const near = t.scrollHeight - t.scrollTop - t.clientHeight < 160;
  if (force || near) t.scrollTop = t.scrollHeight;
}

export function add(node) {
  // Which event made it, for the replay.
  if (node instanceof HTMLElement && !node.dataset.step) node.dataset.step = String(S.step);
  const transcript = $('transcript');
  const waiting = $('thinking');
  if (waiting) transcript.insertBefore(node, waiting);
  else transcript.append(node);
  scrollDown(false);
  return node;
}

/** A sign of life while the model has not said anything yet: from the call to the first
 *  word, tool call or question. */
export function thinking(text) {
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
export const ENDS_THINKING = new Set(['assistant_text', 'tool_started', 'ask', 'takeover', 'plan_proposed', 'permission_request', 'complete', 'error', 'thread_run_end']);

/** Tells a screen reader what changed, in a few words (the conversation itself is not a
 *  live region: streamed text would be read out chunk by chunk). */
export function announce(text) {
  if (!S.caughtUp) return;
  const live = $('announce');
  live.textContent = '';
  setTimeout(() => (live.textContent = text), 50);
}

export function note(text, cls) {
  return add(el('div', { class: 'note' + (cls ? ' ' + cls : ''), text }));
}

export function endText() {
  S.assistant = null;
}

export let pendingText = null;
export function appendText(text) {
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

export function flushText() {
  if (pendingText) {
    cancelAnimationFrame(pendingText);
    pendingText = null;
  }
  if (S.assistant) markdown(S.assistant.node, S.assistant.text);
}

export function keyArgument(event) {
  if (event.summary) return event.summary;
  const args = event.arguments || {};
  for (const value of Object.values(args)) {
    if (typeof value === 'string') return value;
  }
  return '';
}

export function toolCard(event) {
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

export function finishCard(event, ok) {
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

export function attentionCard(title, cls) {
  const body = el('div', { class: 'body' });
  const card = el('section', { class: 'card attention ' + (cls || '') }, el('div', { class: 'head' }, el('strong', { text: title })), body);
  card.bodyNode = body;
  return card;
}

export function fileLinks(paths) {
  if (!paths || !paths.length) return null;
  return el(
    'ul',
    { class: 'chips' },
    paths.map((p) =>
      el('li', {}, el('button', { type: 'button', class: 'link', text: p, onclick: () => previewFile(p, true) })),
    ),
  );
}

export function planList(plan) {
  return el(
    'ol',
    {},
    plan.steps.map((step) =>
      el('li', { class: step.status }, step.description, el('span', { class: 'step-state', text: step.status.replace('_', ' ') })),
    ),
  );
}

export const OWN_CARDS = new Set(['ask', 'complete', 'web_browser_takeover', 'create_plan']);

// Every reason a call asks, one per line, as text.
export function reasons(why) {
  const list = el('ul', { class: 'reasons muted' });
  for (const line of String(why || '').split('\n')) {
    if (line.trim()) list.append(el('li', { text: line }));
  }
  return list;
}

export const DECISIONS = {
  allow_once: 'Allow once',
  allow_for_thread: 'Allow for this thread',
  deny: 'Deny',
};

/** Shows one event of the thread's runs.
 * @param {import('./protocol').RunEvent} event */
export function render(event) {
  S.step += 1;
  const welcomeNode = $('welcome');
  if (welcomeNode) welcomeNode.remove();
  if (ENDS_THINKING.has(event.type)) thinking(null);
  switch (event.type) {
    case 'thread_run_start':
      endText();
      add(el('div', { class: 'divider', 'data-run': event.run_id, text: 'run started · ' + event.model }));
      decorateTurns();
      break;
    case 'thread_rewound':
      flushText();
      endText();
      note('Rewound to ' + event.checkpoint + ': the thread goes on from here.', 'decision');
      if (S.caughtUp) selectThread(S.current);
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
      const card = add(attentionCard(event.agent_thread ? 'A sub-agent asks' : 'The agent asks', 'ask'));
      const text = el('div', { class: 'msg assistant' });
      markdown(text, event.text);
      card.bodyNode.append(text);
      const links = fileLinks(event.attachments);
      if (links) card.bodyNode.append(links);
      const buttons = el('div', { class: 'buttons' }, el('button', { type: 'button', class: 'primary', text: 'Answer', onclick: () => openWaiting('ask') }));
      const asker = event.agent_thread;
      if (asker) buttons.append(el('button', { type: 'button', class: 'link', text: 'Open its thread', onclick: () => selectThread(asker) }));
      card.bodyNode.append(buttons);
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
    case 'waiting_for_events':
      flushText();
      endText();
      note('Waiting for: ' + event.waits_for + '. The agent wakes when it happens.');
      break;
    case 'wait_ended':
      note((event.timed_out ? 'The wait ran out: ' : 'Woke: ') + event.text.split('\n')[0]);
      break;
    case 'agent_spawned': {
      flushText();
      endText();
      const line = add(el('div', { class: 'note agent', 'data-agent-thread': event.thread }));
      line.append(
        '↳ Sub-agent ' + event.agent + ': ' + event.task.split('\n')[0] + ' ',
        el('button', { type: 'button', class: 'link', text: 'Open its thread', onclick: () => selectThread(event.thread) }),
        el('span', { class: 'agent-state', text: ' · working' }),
      );
      break;
    }
    case 'agent_progress': {
      const state = document.querySelector('[data-agent-thread="' + event.thread + '"] .agent-state');
      if (state) state.textContent = ' · ' + event.doing.split('\n')[0].slice(0, 80);
      break;
    }
    case 'agent_finished': {
      const state = document.querySelector('[data-agent-thread="' + event.thread + '"] .agent-state');
      const cost = typeof event.cost === 'number' ? ' · $' + event.cost.toFixed(4) : '';
      const said = event.answer ? ': ' + event.answer.split('\n')[0] : '';
      if (state) state.textContent = ' · ' + event.status + ' · ' + Number(event.tokens).toLocaleString('en-US') + ' tokens' + cost + said;
      break;
    }
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
      if (S.caughtUp) {
        filesChanged();
        loadCheckpoints(S.current);
      }
      break;
    default:
      break;
  }
  if (S.caughtUp && NEEDS_VIEW.has(event.type)) refreshView();
}

/** What a run's model calls took and cost, as ` · 3 calls · 12,345 tokens in (10,000 cached) · 456 out · $0.0123 · 42.1 s`. */
export function spendText(event) {
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

export const NEEDS_VIEW = new Set([
  'thread_run_start',
  'thread_run_end',
  'ask',
  'takeover',
  'takeover_ended',
  'waiting_for_events',
  'wait_ended',
  'plan_proposed',
  'plan_updated',
  'permission_request',
  'permission_decided',
  'user_message',
  'error',
]);

export function renderPlan() {
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
