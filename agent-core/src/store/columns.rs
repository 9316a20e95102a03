//! A stored message as the columns of a SQL table ([`MessageRow`]): the one decoding of
//! roles, statuses and JSON columns into a [`StoredMessage`], shared by the SQLite store and
//! any other store that keeps rows the same way (agent-postgres).

use super::{MessageStatus, StoredMessage, ToolStatus};
use crate::message::{Message, ToolCall};

/// One message row as a SQL store keeps it (docs/design.md §7): a store reads its row's
/// columns into this and calls [`into_stored`](Self::into_stored).
#[derive(Clone, Debug, Default)]
pub struct MessageRow {
    /// The row's id.
    pub id: i64,
    /// The session it belongs to.
    pub session_id: String,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
    /// An assistant's tool calls, as a JSON list.
    pub tool_calls: Option<String>,
    /// A tool result's call id.
    pub tool_call_id: Option<String>,
    /// A tool result's tool name.
    pub name: Option<String>,
    /// An assistant's reasoning text.
    pub reasoning: Option<String>,
    /// An assistant's reasoning signature.
    pub reasoning_signature: Option<String>,
    /// When it was stored, in microseconds since the Unix epoch.
    pub created_at: i64,
    /// When its request was sent, in microseconds.
    pub request_sent_at: Option<i64>,
    /// When its response completed, in microseconds.
    pub response_completed_at: Option<i64>,
    /// `pending`, `completed` or `failed`.
    pub status: String,
    /// Whether it is left out of the history a model reads.
    pub silent: bool,
    /// A tool result's `success` or `error`.
    pub tool_status: Option<String>,
    /// An assistant's provider blocks, as a JSON list.
    pub provider_blocks: Option<String>,
}

impl MessageRow {
    /// The stored message these columns hold, or what makes them none (an unknown role or
    /// status, a tool row without its call id, JSON that does not read).
    pub fn into_stored(self) -> Result<StoredMessage, String> {
        let tool_status = match self.tool_status.as_deref() {
            None => None,
            Some("success") => Some(ToolStatus::Success),
            Some("error") => Some(ToolStatus::Error),
            Some(other) => return Err(format!("unknown tool_status `{other}`")),
        };
        let content = self.content;
        let message = match self.role.as_str() {
            "system" => Message::System { content },
            "user" => Message::User { content },
            "assistant" => Message::Assistant {
                content,
                reasoning: self.reasoning.unwrap_or_default(),
                tool_calls: json_list::<ToolCall>(self.tool_calls, "a JSON list of tool calls")
                    .map_err(|error| format!("tool_calls is not {error}"))?,
                reasoning_signature: self.reasoning_signature,
                provider_blocks: json_list(self.provider_blocks, "a JSON list")
                    .map_err(|error| format!("provider_blocks is not {error}"))?,
            },
            "tool" => Message::Tool {
                call_id: self.tool_call_id.ok_or("a tool row without tool_call_id")?,
                name: self.name.ok_or("a tool row without name")?,
                content,
                is_error: tool_status.ok_or("a tool row without tool_status")? == ToolStatus::Error,
            },
            other => return Err(format!("unknown role `{other}`")),
        };
        Ok(StoredMessage {
            id: self.id,
            session_id: self.session_id,
            message,
            created_at: self.created_at,
            request_sent_at: self.request_sent_at,
            response_completed_at: self.response_completed_at,
            status: MessageStatus::parse(&self.status)
                .ok_or_else(|| format!("unknown status `{}`", self.status))?,
            silent: self.silent,
            tool_status,
        })
    }
}

/// A JSON list column: empty when the column is null.
fn json_list<T: serde::de::DeserializeOwned>(
    column: Option<String>,
    what: &str,
) -> Result<Vec<T>, String> {
    match column {
        None => Ok(Vec::new()),
        Some(json) => serde_json::from_str(&json).map_err(|error| format!("{what}: {error}")),
    }
}
