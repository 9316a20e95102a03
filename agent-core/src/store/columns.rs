//! A message as the columns of a SQL table: the one encoding of a [`Message`] into them
//! ([`MessageColumns`]) and the one decoding of a row back ([`MessageRow`]), shared by the
//! SQLite store and any other store that keeps rows the same way (agent-postgres).

use super::{MessageStatus, StoredMessage, ToolStatus};
use crate::message::{Message, ToolCall, shared_calls};
use crate::text::Text;

/// The columns a [`Message`] fills when it is written: role, content, tool calls as JSON,
/// tool call id, name, reasoning, reasoning signature, the tool status derived from it, and
/// provider blocks as JSON. Empty reasoning and empty lists are NULL.
#[derive(Debug)]
pub struct MessageColumns<'m> {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// The text.
    pub content: &'m str,
    /// An assistant's tool calls as a JSON list (NULL when there are none).
    pub tool_calls: Option<String>,
    /// A tool result's call id.
    pub tool_call_id: Option<&'m str>,
    /// A tool result's tool name.
    pub name: Option<&'m str>,
    /// An assistant's reasoning (NULL when empty).
    pub reasoning: Option<&'m str>,
    /// An assistant's reasoning signature.
    pub reasoning_signature: Option<&'m str>,
    /// A tool result's `success` or `error`.
    pub tool_status: Option<&'static str>,
    /// An assistant's provider blocks as a JSON list (NULL when there are none).
    pub provider_blocks: Option<String>,
}

impl<'m> MessageColumns<'m> {
    /// The columns of `message`; an error only when its JSON parts do not serialize.
    pub fn of(message: &'m Message) -> Result<Self, serde_json::Error> {
        let mut columns = MessageColumns {
            role: message.role(),
            content: message.text(),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            reasoning: None,
            reasoning_signature: None,
            tool_status: ToolStatus::of(message).map(ToolStatus::as_str),
            provider_blocks: None,
        };
        match message {
            Message::System { .. } | Message::User { .. } => {}
            Message::Assistant {
                reasoning,
                tool_calls,
                reasoning_signature,
                provider_blocks,
                ..
            } => {
                if !tool_calls.is_empty() {
                    columns.tool_calls = Some(serde_json::to_string(tool_calls)?);
                }
                if !provider_blocks.is_empty() {
                    columns.provider_blocks = Some(serde_json::to_string(provider_blocks)?);
                }
                columns.reasoning = (!reasoning.is_empty()).then_some(reasoning.as_str());
                columns.reasoning_signature = reasoning_signature.as_deref();
            }
            Message::Tool { call_id, name, .. } => {
                columns.tool_call_id = Some(call_id);
                columns.name = Some(name);
            }
        }
        Ok(columns)
    }
}

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
        let content = self.content.into();
        let message = match self.role.as_str() {
            "system" => Message::System { content },
            "user" => Message::User { content },
            "assistant" => Message::Assistant {
                content,
                reasoning: self.reasoning.map(Text::from).unwrap_or_default(),
                tool_calls: json_list::<ToolCall>(self.tool_calls, "a JSON list of tool calls")
                    .map(shared_calls)
                    .map_err(|error| format!("tool_calls is not {error}"))?,
                reasoning_signature: self.reasoning_signature,
                provider_blocks: json_list(self.provider_blocks, "a JSON list")
                    .map_err(|error| format!("provider_blocks is not {error}"))?,
            },
            "tool" => Message::Tool {
                call_id: self
                    .tool_call_id
                    .ok_or("a tool row without tool_call_id")?
                    .into(),
                name: self.name.ok_or("a tool row without name")?.into(),
                content,
                is_error: tool_status.ok_or("a tool row without tool_status")? == ToolStatus::Error,
            },
            other => return Err(format!("unknown role `{other}`")),
        };
        Ok(StoredMessage {
            id: self.id,
            session_id: self.session_id.into(),
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

/// A table a version of a SQL session schema has, and the key columns it holds: what a store
/// checks a database against before taking it for its own (one that records a version
/// without them is another program's, or was changed by hand).
#[derive(Clone, Copy, Debug)]
pub struct ExpectedTable {
    /// The schema version that brought the table or these columns.
    pub since: i64,
    /// The table.
    pub table: &'static str,
    /// Columns it must hold from that version on.
    pub columns: &'static [&'static str],
}

/// The first table or column of schema version `found` missing from the database, as an error
/// names it (`the table `messages``, `the column `messages.status` (of version 1)`); `None`
/// when it holds them all. `present` gives a table's columns (none when it is missing).
pub fn missing_from_schema(
    expected: &[ExpectedTable],
    found: i64,
    mut present: impl FnMut(&str) -> Vec<String>,
) -> Option<String> {
    expected
        .iter()
        .filter(|expected| expected.since <= found)
        .find_map(|expected| {
            let (table, present) = (expected.table, present(expected.table));
            if present.is_empty() {
                return Some(format!("the table `{table}`"));
            }
            let column = expected
                .columns
                .iter()
                .find(|column| !present.iter().any(|p| p == *column))?;
            Some(format!(
                "the column `{table}.{column}` (of version {})",
                expected.since
            ))
        })
}
