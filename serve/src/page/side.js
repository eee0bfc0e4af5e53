// @ts-check
// The side panels (the plan, the workspace's files, the agent's browser), the tabs
// between them and the layout's toggles.

import { api, keyed, say, threadPath } from './api.js';
import { submit, upload } from './composer.js';
import { dialogButton, takeover } from './dialogs.js';
import { $, el } from './dom.js';
import { S } from './state.js';
import { bytes } from './text.js';
import { loadThreads, refreshView, selectThread } from './threads.js';

// ---------------------------------------------------------------- files

export let filesTimer = null;
export function filesChanged() {
  clearTimeout(filesTimer);
  filesTimer = setTimeout(loadFiles, 400);
}

export async function loadFiles() {
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

export function contentUrl(path, download) {
  return keyed(threadPath(S.current, '/files/content?path=' + encodeURIComponent(path) + (download ? '&download=true' : '')));
}

export const TEXT_TYPES = /\.(txt|md|markdown|csv|tsv|json|jsonl|log|py|rs|js|mjs|ts|tsx|jsx|css|sh|bash|ya?ml|toml|ini|cfg|conf|xml|sql|c|h|cpp|hpp|go|java|kt|rb|php|pl|r|lua|swift|diff|patch|tex|rst|org)$/i;

export async function previewFile(path, reveal) {
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

export let shotVersion = 0;
export function loadScreenshot() {
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

export const TABS = ['plan', 'files', 'browser'];

export function selectTab(name) {
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

export function toggle(buttonId, panelId) {
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
export function optionsSummary() {
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
