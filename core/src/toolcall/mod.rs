//! How a model calls tools: natively through its provider, or in Suna's XML in its text.
//! The agent parses the calls; the context keeps XML results apart from what people said.

pub mod xml;

/// How the model calls tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    /// The provider's native tool calling.
    Native,
    /// Suna's XML format in the answer text.
    Xml,
}

impl ToolMode {
    /// `native` or `xml`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Native => "native",
            ToolMode::Xml => "xml",
        }
    }

    /// Parses `native` or `xml`.
    pub fn parse(s: &str) -> Option<ToolMode> {
        match s {
            "native" => Some(ToolMode::Native),
            "xml" => Some(ToolMode::Xml),
            _ => None,
        }
    }
}
