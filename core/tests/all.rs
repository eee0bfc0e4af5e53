//! The controller's tests: the agent in process against the scripted model and a real coved,
//! the providers' wire formats, long runs; in one test binary so that a full run links once.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

mod suite;
