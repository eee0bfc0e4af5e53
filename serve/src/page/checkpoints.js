// @ts-check
// A thread's checkpoints on its turns: what a turn changed, going back to where it began
// (the files and the conversation), and a new thread from there.

import { api, say, threadPath } from './api.js';
import { closeDialog, dialogButton } from './dialogs.js';
import { $, el } from './dom.js';
import { S } from './state.js';
import { loadThreads, selectThread } from './threads.js';

/** Reads the open thread's checkpoints, then gives its turns their actions. */
export async function loadCheckpoints(id) {
  /** @type {import('./protocol').ThreadCheckpoints} */
  let list;
  try {
    list = await api('GET', threadPath(id, '/checkpoints'));
  } catch (e) {
    return;
  }
  if (S.current !== id) return;
  S.checkpoints = list.checkpoints;
  decorateTurns();
}

/** The checkpoint taken as run `run` began. */
function turnStart(run) {
  return S.checkpoints.find((c) => c.run_id === run && c.reason === 'run start');
}

/** Gives each turn whose start was recorded its actions. */
export function decorateTurns() {
  for (const divider of document.querySelectorAll('#transcript .divider[data-run]')) {
    const start = turnStart(divider.getAttribute('data-run'));
    if (!start || divider.querySelector('.turn-actions')) continue;
    divider.append(
      el(
        'span',
        { class: 'turn-actions' },
        el('button', { type: 'button', class: 'link turn-changes', text: 'Changes', onclick: () => showChanges(start) }),
        el('button', { type: 'button', class: 'link turn-rewind', text: 'Rewind to here', onclick: () => confirmRewind(start) }),
        el('button', { type: 'button', class: 'link turn-fork', text: 'Fork from here', onclick: () => fork(start) }),
      ),
    );
  }
}

/** Opens the page's dialog with a title, a body and buttons of its own. */
function openDialog(title, body, buttons) {
  closeDialog();
  $('dialog-title').textContent = title;
  $('dialog-body').textContent = '';
  $('dialog-body').append(...body);
  $('dialog-actions').textContent = '';
  $('dialog-actions').append(...buttons);
  $('dialog-error').hidden = true;
  /** @type {HTMLDialogElement} */ ($('dialog')).showModal();
}

function failInDialog(e) {
  const error = $('dialog-error');
  error.textContent = e.message;
  error.hidden = false;
}

/** What the turn begun at `start` changed: to the next turn's start, or to now. */
async function showChanges(start) {
  const at = S.checkpoints.indexOf(start);
  const next = S.checkpoints.slice(at + 1).find((c) => c.reason === 'run start');
  const to = next ? next.checkpoint : 'current';
  /** @type {import('./protocol').CheckpointDiff} */
  let diff;
  try {
    diff = await api('GET', threadPath(S.current, '/checkpoints/' + encodeURIComponent(start.checkpoint) + '/diff?to=' + encodeURIComponent(to)));
  } catch (e) {
    say(e.message);
    return;
  }
  const sign = { added: '+', changed: '~', deleted: '-' };
  const lines = diff.changes.map((c) => {
    const mode = c.mode_from && c.mode_to && c.mode_from !== c.mode_to ? ' (mode ' + c.mode_from + ' → ' + c.mode_to + ')' : '';
    return el('li', { class: 'change ' + c.change, text: sign[c.change] + ' ' + c.path + (c.kind === 'dir' ? '/' : '') + mode + (c.binary ? ' (binary)' : '') });
  });
  const text = diff.changes
    .map((c) => c.diff || '')
    .filter(Boolean)
    .join('');
  const summary = diff.added + ' added, ' + diff.changed + ' changed, ' + diff.deleted + ' deleted' + (next ? '' : ' (to now)');
  openDialog(
    'What this turn changed',
    [
      el('p', { class: 'muted', text: summary }),
      lines.length ? el('ul', { class: 'changes' }, lines) : el('p', { text: 'No file changed.' }),
      text ? el('pre', { class: 'diff', text }) : null,
      diff.truncated ? el('p', { class: 'muted', text: 'Some of it was left out to keep this short.' }) : null,
    ].filter(Boolean),
    [dialogButton('Close', '', async () => closeDialog())],
  );
}

function confirmRewind(start) {
  openDialog(
    'Rewind to where this turn began?',
    [
      el('p', { text: 'The workspace and the conversation go back to just before this turn. The messages after it are kept aside, not deleted; the files as they are now are kept as a checkpoint too.' }),
    ],
    [
      dialogButton('Rewind', 'danger', async () => {
        try {
          await api('POST', threadPath(S.current, '/rewind'), { checkpoint: start.checkpoint });
        } catch (e) {
          failInDialog(e);
          return;
        }
        closeDialog();
        selectThread(S.current);
      }),
      dialogButton('Cancel', '', async () => closeDialog()),
    ],
  );
}

async function fork(start) {
  /** @type {import('./protocol').ForkAnswer} */
  let made;
  try {
    made = await api('POST', threadPath(S.current, '/fork'), { checkpoint: start.checkpoint });
  } catch (e) {
    say(e.message);
    return;
  }
  await loadThreads();
  selectThread(made.thread_id);
}
