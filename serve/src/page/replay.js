// @ts-check
// A finished thread step by step: a slider over what its transcript shows, each step
// showing the conversation up to it and the browser as the agent last left it by then.

import { $ } from './dom.js';
import { S } from './state.js';

/** The transcript's items, oldest first (each holds the number of the event that made it). */
function items() {
  return /** @type {HTMLElement[]} */ ([...$('transcript').children].filter((n) => n instanceof HTMLElement && n.dataset.step));
}

/** Whether the open thread can be replayed: it has run and runs no more. */
export function canReplay() {
  return !!(S.current && S.view && !S.view.running && items().length > 1);
}

/** Shows or hides the Replay button as the thread stands; a run that starts ends a replay. */
export function updateReplay() {
  $('replay').hidden = !canReplay();
  if (!canReplay() && !$('replay-bar').hidden) closeReplay();
}

function openReplay() {
  const all = items();
  const slider = /** @type {HTMLInputElement} */ ($('replay-step'));
  slider.min = '1';
  slider.max = String(all.length);
  slider.value = '1';
  $('replay-bar').hidden = false;
  $('replay').setAttribute('aria-expanded', 'true');
  show(1);
  slider.focus();
}

export function closeReplay() {
  for (const node of items()) node.hidden = false;
  $('replay-bar').hidden = true;
  $('replay').setAttribute('aria-expanded', 'false');
}

/** Shows the transcript up to its `k`-th item, and the browser as it was then. */
function show(k) {
  const all = items();
  let shot = null;
  all.forEach((node, i) => {
    node.hidden = i >= k;
    if (i < k) {
      const pictures = node.querySelectorAll('img.shot');
      if (pictures.length) shot = pictures[pictures.length - 1];
    }
  });
  const current = all[k - 1];
  const what = current ? summary(current) : '';
  $('replay-where').textContent = 'Step ' + k + ' of ' + all.length + (what ? ': ' + what.slice(0, 90) + (what.length > 90 ? '…' : '') : '');
  const picture = /** @type {HTMLImageElement} */ ($('replay-shot'));
  if (shot) {
    picture.src = /** @type {HTMLImageElement} */ (shot).src;
    picture.alt = /** @type {HTMLImageElement} */ (shot).alt;
    picture.hidden = false;
  } else {
    picture.hidden = true;
    picture.removeAttribute('src');
  }
  if (current) current.scrollIntoView({ block: 'nearest' });
}

/** What an item is, in a line: a card by its head (tool, argument, state), else its text. */
function summary(node) {
  const head = node.querySelector(':scope > summary, :scope > .head');
  const text = head
    ? [...head.children].map((c) => (c.textContent || '').trim()).filter(Boolean).join(' · ')
    : node.textContent || '';
  return text.replace(/\s+/g, ' ').trim();
}

$('replay').addEventListener('click', () => ($('replay-bar').hidden ? openReplay() : closeReplay()));
$('replay-close').addEventListener('click', closeReplay);
$('replay-step').addEventListener('input', (e) => show(Number(/** @type {HTMLInputElement} */ (e.target).value)));
$('replay-prev').addEventListener('click', () => step(-1));
$('replay-next').addEventListener('click', () => step(1));

function step(by) {
  const slider = /** @type {HTMLInputElement} */ ($('replay-step'));
  const k = Math.min(Number(slider.max), Math.max(1, Number(slider.value) + by));
  slider.value = String(k);
  show(k);
}
