// @ts-check
// Cove's page: the threads of this server, a thread's conversation as its events stream in
// (Server-Sent Events, resumed by the browser with Last-Event-ID), the plan, the
// workspace's files and the agent's browser, and dialogs for what the agent waits for.
// Plain JavaScript in ES modules, served as they are (no build step); it talks to its own
// origin only. Text from the agent, the tools and the
// workspace is always put in the page as text (textContent), never as markup.

import { keyTaken, pageKey } from './api.js';
import './composer.js';
import './dialogs.js';
import './side.js';
import { S } from './state.js';
import { loadThreads, selectThread } from './threads.js';

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
