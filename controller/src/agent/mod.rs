//! The agent: the run loop and the processing of each model answer.

pub mod xml;
