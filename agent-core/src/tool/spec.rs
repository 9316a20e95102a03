//! What the model sees of a tool ([`ToolSpec`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model sees it: name, description and JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What the tool does (the function's doc comment).
    pub description: String,
    /// JSON Schema 2020-12 of the arguments.
    pub parameters: Value,
}
