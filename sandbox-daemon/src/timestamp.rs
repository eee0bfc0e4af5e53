//! The daemon's timestamps on the wire.

use std::time::SystemTime;

/// RFC 3339 UTC timestamp with second precision.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}
