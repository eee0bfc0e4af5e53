// Generated from cove-protocol's JSON schemas by cove-serve's tests
// (serve/src/page_types.rs): do not edit; COVE_WRITE_PAGE_TYPES=1 cargo test -p
// cove-serve writes it again.

/** One event of a run. */
export type RunEvent = {
  run_id: string;
  /** Position in the run, from 0, without gaps. */
  seq: number;
  thread_id: string;
  /** Milliseconds since the Unix epoch. */
  timestamp_ms: number;
} & (
  | {
    model: string;
    sandbox: string;
    type: "thread_run_start";
  }
  | {
    /**
     * What the person did, when Cove wrote the message for them (an approval of the
     * plan): shown instead of `text`, which is worded for the model.
     */
    says?: string | null;
    text: string;
    type: "user_message";
  }
  | {
    iteration: number;
    type: "assistant_response_start";
  }
  | {
    text: string;
    type: "assistant_text";
  }
  | {
    attempt: number;
    delay_ms: number;
    reason: string;
    type: "llm_retry";
  }
  | {
    arguments: unknown;
    call_id: string;
    /** The argument that says most about the call (the command, the path, the URL). */
    summary?: string | null;
    tool: string;
    type: "tool_started";
  }
  | {
    call_id: string;
    /** The result as the model will read it (shortened for display by renderers). */
    output: string;
    tool: string;
    type: "tool_completed";
  }
  | {
    call_id: string;
    error: string;
    tool: string;
    type: "tool_failed";
  }
  | {
    /**
     * The sub-agent's thread, when the question is a sub-agent's put through its
     * parent (the answer goes to it).
     */
    agent_thread?: string | null;
    attachments: Array<string>;
    text: string;
    type: "ask";
  }
  | {
    expires_at?: string | null;
    text: string;
    token?: string | null;
    type: "takeover";
    url?: string | null;
  }
  | {
    note?: string | null;
    reason: string;
    type: "takeover_ended";
  }
  | {
    since: number;
    type: "waiting_for_events";
    until: number;
    waits_for: string;
  }
  | {
    text: string;
    timed_out: boolean;
    type: "wait_ended";
  }
  | {
    agent: number;
    task: string;
    thread: string;
    type: "agent_spawned";
  }
  | {
    agent: number;
    doing: string;
    thread: string;
    type: "agent_progress";
  }
  | {
    agent: number;
    answer?: string | null;
    /** What they cost in US dollars, when the model's price is known. */
    cost?: number | null;
    status: string;
    thread: string;
    /** Tokens its model calls took (in and out). */
    tokens: number;
    type: "agent_finished";
  }
  | {
    plan: Plan;
    type: "plan_proposed";
  }
  | {
    /** The agent's note with a step's new status. */
    note?: string | null;
    plan: Plan;
    type: "plan_updated";
  }
  | {
    arguments: unknown;
    call_id: string;
    decisions: Array<string>;
    request_id: string;
    summary: string;
    tool: string;
    type: "permission_request";
    why: string;
  }
  | {
    call_id: string;
    decision: string;
    reason?: string | null;
    request_id: string;
    type: "permission_decided";
  }
  | {
    error?: string | null;
    server: string;
    status: string;
    tools: number;
    type: "mcp_status";
  }
  | {
    files: number;
    name: string;
    path: string;
    type: "skill_loaded";
  }
  | {
    attachments: Array<string>;
    text?: string | null;
    type: "complete";
  }
  | {
    /** Older answers whose long tool-call arguments were dropped. */
    arguments_dropped: number;
    /** Messages left out whole. */
    omitted: number;
    tokens_after: number;
    /** Prompt tokens before and after. */
    tokens_before: number;
    /** Messages cut to a threshold. */
    truncated: number;
    type: "context_compressed";
  }
  | {
    first_message: number;
    last_message: number;
    /** How many messages the summary replaces. */
    messages: number;
    type: "context_summarized";
  }
  | {
    finish_reason: FinishReason;
    type: "finish";
  }
  | {
    fatal: boolean;
    message: string;
    type: "error";
  }
  | {
    /** The branch number the messages left aside carry. */
    branch?: number | null;
    checkpoint: string;
    type: "thread_rewound";
  }
  | {
    /** What those calls cost in US dollars; absent when the model's price is unknown. */
    cost?: number | null;
    /** From the run's start to its end. */
    duration_ms?: number;
    status: RunStatus;
    type: "thread_run_end";
    /** Tokens over the run's model calls, as the provider billed them. */
    usage?: TokenUsage;
  }
);

/** A thread as the API shows it. */
export type ThreadView = {
  /** Milliseconds since the Unix epoch. */
  created_at: number;
  id: string;
  /** The number of its newest event (0: none yet). */
  last_event: number;
  /** `provider/model`. */
  model: string;
  /** The thread whose agent started this one as a sub-agent. */
  parent_id?: string | null;
  /** A run of this server works on it now. */
  running: boolean;
  /** `local:<workspace>`, `docker:<name>` or a daemon's URL. */
  sandbox: string;
  /** `new`, `running`, `waiting`, `paused`, `completed`, `stopped` or `failed`. */
  status: string;
  title: string;
  tool_mode: string;
  updated_at: number;
  /** What it waits for from a person. */
  waiting: Array<WaitingRequest>;
  /**
   * What its run waits for in the sandbox (`wait_for_events`), while it does: it wakes
   * by itself, no person needed.
   */
  waiting_for?: EventWaitView | null;
};

/** `GET /v1/threads`. */
export type ThreadList = {
  /** Newest first. */
  threads: Array<ThreadView>;
};

/** The answer to `GET /v1/threads/{id}/checkpoints`. */
export type ThreadCheckpoints = {
  /** Oldest first. */
  checkpoints: Array<ThreadCheckpointView>;
};

/** The answer to `GET /v1/checkpoints/{id}/diff`. */
export type CheckpointDiff = {
  added: number;
  changed: number;
  /** Sorted by path; folders that only hold changes are not listed themselves. */
  changes: Array<PathChange>;
  deleted: number;
  from: string;
  to: string;
  /** Some diffs were cut (or left out) to keep the answer small. */
  truncated: boolean;
};

/** The answer to `POST /v1/threads/{id}/fork`: the new thread. */
export type ForkAnswer = {
  checkpoint: string;
  forked_from: string;
  thread_id: string;
};

/** How a path differs between two points. */
export type Change = "added" | "changed" | "deleted";

/** What a path is. */
export type EntryKind = "file" | "dir" | "symlink";

/** A run's wait for its watches in the sandbox. */
export type EventWaitView = {
  /** Since when (milliseconds since the Unix epoch). */
  since: number;
  /** What it waits for, in a few words ("tests to finish"). */
  summary: string;
  /** When it gives up at the latest. */
  until: number;
};

/** Why one model answer ended. */
export type FinishReason = "stop" | "length" | "tool_calls" | "xml_tool_limit_reached" | "agent_terminated";

/** One path that differs. */
export type PathChange = {
  /** Content that is not UTF-8 text: named, not shown. */
  binary: boolean;
  change: Change;
  /** A unified diff of a text file's content (capped), when it changed. */
  diff?: string | null;
  /** What it is at `to` (at `from` when deleted). */
  kind: EntryKind;
  /** Permission bits at `from` and `to` (octal), when it is there. */
  mode_from?: string | null;
  mode_to?: string | null;
  /** Relative to the workspace root. */
  path: string;
};

/** A version of a thread's plan. */
export type Plan = {
  goal: string;
  /** The thread's plan: the same across versions. */
  id: string;
  /** Why the user rejected it, when they said. */
  reason?: string | null;
  status: PlanStatus;
  steps: Array<PlanStep>;
  /** From 1. */
  version: number;
};

/** Where a version of a plan stands with the user. */
export type PlanStatus = "proposed" | "approved" | "rejected" | "superseded";

/** One step of a plan. */
export type PlanStep = {
  description: string;
  /** Short and stable across versions where the step stays ("1", "2", …). */
  id: string;
  status?: StepStatus;
};

/** How a run ended. */
export type RunStatus = "completed" | "paused" | "stopped" | "failed";

/** Where a step stands. */
export type StepStatus = "pending" | "in_progress" | "completed" | "skipped";

/** A checkpoint of a thread's workspace, and where in its conversation it was taken. */
export type ThreadCheckpointView = {
  /** The thread's newest message when it was taken. */
  after_message: number;
  /** Paths changed since the checkpoint before it. */
  changed: number;
  /** The sandbox's id for it (`c12`). */
  checkpoint: string;
  /** When (ms since the epoch). */
  created_at: number;
  files: number;
  /** `run start`, or the tools of the iteration it follows. */
  reason: string;
  /** The run that took it (empty for one taken by a fork). */
  run_id: string;
};

/** Tokens of one or more model calls. */
export type TokenUsage = {
  /** Of the prompts: written to the provider's cache. */
  cache_write_tokens: number;
  /** Of the prompts: read from the provider's cache. */
  cached_tokens: number;
  /** Model calls counted. */
  calls: number;
  /** The prompts, whole (cached and written parts included). */
  input_tokens: number;
  output_tokens: number;
};

/** Something a thread waits for from a person. */
export type WaitingRequest = {
  arguments?: unknown;
  created_at: number;
  decision?: string | null;
  id: string;
  /** `ask`, `permission`, `plan` or `takeover`. */
  kind: string;
  /** The question, the call or the plan in one line. */
  summary: string;
  tool?: string | null;
  /** What made the policy ask (permissions). */
  why?: string | null;
};
