//! Files in the workspace, confined beneath its root.

pub mod http;
pub mod workspace;

pub use workspace::{FileError, Upload, Workspace};
