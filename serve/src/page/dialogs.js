// @ts-check
// What the agent waits for, answered in dialogs: questions, plans, permissions; the
// takeover link.

import { api, say, threadPath } from './api.js';
import { $, el } from './dom.js';
import { S } from './state.js';
import { markdown } from './text.js';
import { refreshView } from './threads.js';
import { planList, reasons } from './transcript.js';

// ---------------------------------------------------------------- answers and dialogs

export async function decide(request, decision, reason) {
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

export function waitingOpen() {
  return ((S.view && S.view.waiting) || []).filter((w) => !w.decision);
}

/** Keeps the dialog in step with what the thread waits for: opens it for the first thing,
 *  closes it once someone (here or in another tab) has answered. */
export function reconcile() {
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

export function openWaiting(kind) {
  const open = waitingOpen().filter((w) => !kind || w.kind === kind);
  if (!open.length) {
    say('This was answered already.');
    return;
  }
  S.dismissed.delete(open[0].id);
  closeDialog();
  showDialog(open[0]);
}

export function closeDialog() {
  const dialog = $('dialog');
  S.dialogFor = null;
  if (dialog.open) dialog.close();
}

/** A dialog button; while its action runs, every button of the dialog waits. */
export function dialogButton(text, cls, action) {
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

export function showDialog(waiting) {
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
    // A sub-agent's question, put through this thread: the answer goes to it.
    const args = /** @type {{agent_thread?: string} | undefined} */ (waiting.arguments);
    $('dialog-title').textContent = args && args.agent_thread ? 'A sub-agent asks' : 'The agent asks';
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
    // The request carries the very plan it asks about: its steps show even before the
    // thread's events have told the page of it.
    const asked = waiting.arguments && Array.isArray(waiting.arguments.steps) ? waiting.arguments : null;
    const plan = asked || S.plan;
    if (plan) body.append(el('p', {}, el('strong', { text: plan.goal })), planList(plan));
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
export async function takeover(where) {
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
