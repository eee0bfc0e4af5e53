//! File wire types. Every path is relative to the daemon's workspace root.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

fn default_dot() -> String {
    ".".to_string()
}

fn default_depth() -> u32 {
    1
}

/// The deepest listing a single call may ask for.
pub const MAX_LIST_DEPTH: u32 = 16;

/// Query of `GET /v1/files/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Directory to list.
    #[serde(default = "default_dot")]
    pub path: String,
    /// 1 lists the directory itself; each step more descends a level (at most 16).
    #[serde(default = "default_depth")]
    pub depth: u32,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            path: default_dot(),
            depth: default_depth(),
        }
    }
}

/// One entry of a listing. Symlinks are reported, never followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileEntry {
    /// Path relative to the workspace root.
    pub path: String,
    pub is_dir: bool,
    pub is_symlink: bool,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Last modification (RFC 3339), when the filesystem knows it.
    pub modified: Option<String>,
}

/// The answer to a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListResponse {
    /// Entries sorted by path.
    pub entries: Vec<FileEntry>,
    /// The entry cap was reached; list a subdirectory or a smaller depth.
    pub truncated: bool,
}

/// `POST /v1/files/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRequest {
    pub path: String,
    /// First line to return (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line to return (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}

impl ReadRequest {
    /// Reads the whole file.
    pub fn whole(path: impl Into<String>) -> Self {
        ReadRequest {
            path: path.into(),
            start_line: None,
            end_line: None,
        }
    }
}

/// The answer to a read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadResponse {
    pub path: String,
    /// The requested lines, with their line endings.
    pub content: String,
    /// Lines in the whole file.
    pub total_lines: u64,
}

/// A Unix permission mode, written as an octal string (`"755"`, `"0644"`) or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMode(pub u32);

impl Serialize for FileMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{:04o}", self.0))
    }
}

impl<'de> Deserialize<'de> for FileMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModeVisitor;

        impl Visitor<'_> for ModeVisitor {
            type Value = FileMode;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an octal mode string such as \"0644\", or a number up to 0o7777")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FileMode, E> {
                match u32::try_from(v) {
                    Ok(mode) if mode <= 0o7777 => Ok(FileMode(mode)),
                    _ => Err(E::invalid_value(de::Unexpected::Unsigned(v), &self)),
                }
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FileMode, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
                }
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<FileMode, E> {
                let digits = v.strip_prefix("0o").unwrap_or(v);
                match u32::from_str_radix(digits, 8) {
                    Ok(mode) if mode <= 0o7777 && !digits.is_empty() => Ok(FileMode(mode)),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }

        deserializer.deserialize_any(ModeVisitor)
    }
}

impl JsonSchema for FileMode {
    fn schema_name() -> Cow<'static, str> {
        "FileMode".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Unix permission mode: an octal string (\"0644\") or a number.",
            "oneOf": [
                {"type": "string", "pattern": "^(0o)?[0-7]{1,4}$"},
                {"type": "integer", "minimum": 0, "maximum": 4095}
            ]
        })
    }
}

/// `POST /v1/files/create`: a new file; fails `already_exists`. Parents are created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    pub path: String,
    pub content: String,
    /// Permission mode; 0644 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FileMode>,
}

/// `POST /v1/files/rewrite`: replace an existing file's content atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewriteRequest {
    pub path: String,
    pub content: String,
}

/// The answer to a write (create, rewrite, upload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WriteResponse {
    pub path: String,
    /// Bytes now in the file.
    pub bytes: u64,
}

/// `POST /v1/files/str_replace`: replace the one occurrence of `old_str`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrReplaceRequest {
    pub path: String,
    pub old_str: String,
    pub new_str: String,
}

/// The answer to a replacement: a few lines around the edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StrReplaceResponse {
    pub path: String,
    /// Lines around the new text, as they now read.
    pub snippet: String,
    /// Line number (1-based) of the snippet's first line.
    pub snippet_start_line: u64,
    /// Line number (1-based) where the replacement begins.
    pub replaced_at_line: u64,
}

/// Query of `DELETE /v1/files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    pub path: String,
    /// Delete a non-empty directory with everything in it.
    #[serde(default)]
    pub recursive: bool,
}

/// The answer to a delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeleteResponse {
    pub path: String,
}

/// Query of `GET`/`PUT /v1/files/content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContentQuery {
    pub path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_from_strings_and_numbers() {
        let m: FileMode = serde_json::from_str(r#""0755""#).unwrap();
        assert_eq!(m, FileMode(0o755));
        let m: FileMode = serde_json::from_str(r#""644""#).unwrap();
        assert_eq!(m, FileMode(0o644));
        let m: FileMode = serde_json::from_str("420").unwrap();
        assert_eq!(m, FileMode(0o644));
        assert_eq!(
            serde_json::to_string(&FileMode(0o755)).unwrap(),
            r#""0755""#
        );
        assert!(serde_json::from_str::<FileMode>(r#""0999""#).is_err());
        assert!(serde_json::from_str::<FileMode>(r#""""#).is_err());
        assert!(serde_json::from_str::<FileMode>("99999").is_err());
        assert!(serde_json::from_str::<FileMode>("-1").is_err());
    }

    #[test]
    fn list_query_defaults_to_the_root_one_level_deep() {
        let q: ListQuery = serde_json::from_str("{}").unwrap();
        assert_eq!(q, ListQuery::default());
        assert_eq!(q.path, ".");
        assert_eq!(q.depth, 1);
    }
}
