// @ts-check
// The message box: a task or a message, its options and attachments.

import { api, keyed, loggedOut, say, threadPath } from './api.js';
import { waitingOpen } from './dialogs.js';
import { $, el } from './dom.js';
import { S } from './state.js';
import { bytes } from './text.js';
import { loadThreads, refreshView, selectThread } from './threads.js';

// ---------------------------------------------------------------- the composer

export function updateComposer() {
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

export async function submit() {
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

export function renderAttachments() {
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

export async function upload(files) {
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
