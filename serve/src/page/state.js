// @ts-check
// What the page holds while it runs: the threads, the open one and what it shows.

export const S = {
  threads: [],
  current: null, // thread id
  view: null, // the current thread as GET /v1/threads/{id} shows it
  source: null, // its EventSource
  lastSeq: 0,
  caughtUp: false,
  step: 0, // events rendered since the transcript was cleared
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
  /** @type {import('./protocol').ThreadCheckpointView[]} */
  checkpoints: [], // the open thread's, oldest first
};
