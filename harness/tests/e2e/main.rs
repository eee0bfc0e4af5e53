//! End to end: the `cove` binary, a local `coved` with real Chromium, the fixture site and the
//! scripted model, in both wire formats and both tool modes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use base64::Engine;
use cove_harness::llm::Wire;
use cove_harness::{Fault, FixtureSite, ScriptedLlm, Turn, procs, workspace_binary};
use serde_json::{Value, json};

mod agent_asks;
mod agents;
mod common;
mod cost;
mod docker_pause;
mod docker_pools;
mod docker_snapshots;
mod export;
mod harbor;
mod isolation;
mod kubernetes;
mod mcp;
mod metrics;
mod model_server;
mod operator;
mod page;
mod page_edges;
mod permissions;
mod plans;
mod project_trust;
mod real_docker;
mod rewind;
mod run;
mod sandboxes;
mod serve;
mod serve_guards;
mod serve_sandboxes;
mod skills;
mod static_coved;
mod takeover;
mod telemetry;
mod terminal;
mod wake;
mod web;

pub(crate) use common::*;
