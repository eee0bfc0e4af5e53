//! MCP (Model Context Protocol) servers as tools for the agent. So far: their configuration,
//! as other MCP hosts write it, and the names their tools get. Starting servers and calling
//! their tools is not built yet.

pub mod config;
pub mod names;
