//! coved's tests against the real binary: one module per endpoint family, and the attack tests
//! of SECURITY.md, in one test binary so that a full run links once.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on the unexpected

mod suite;
