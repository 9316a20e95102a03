//! A [`StoredMessage`] as columns: each [`Message`](crate::message::Message) variant maps onto the role, content and the
//! columns it uses, and back.

use rusqlite::Row;

use crate::store::{MessageRow, StoredMessage};

/// A session's rows, oldest first, in the column order [`stored`] reads.
pub(super) const SELECT_SESSION: &str = "SELECT id, session_id, role, content, tool_calls, tool_call_id, name, \
     reasoning, reasoning_signature, created_at, request_sent_at, response_completed_at, status, silent, tool_status, \
     provider_blocks FROM messages WHERE session_id = ?1 ORDER BY id";

/// A new row: session, the message's columns (as [`MessageColumns`](crate::store::MessageColumns) orders them), created_at,
/// request_sent_at, status and silent.
pub(super) const INSERT: &str = "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, name, \
     reasoning, reasoning_signature, tool_status, created_at, request_sent_at, status, silent, provider_blocks) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

/// A new message, status, completion time and silent flag for row `?1` of session `?2` (a NULL
/// status, time or flag keeps the stored one).
pub(super) const UPDATE_MESSAGE: &str = "UPDATE messages SET role = ?3, content = ?4, tool_calls = ?5, \
     tool_call_id = ?6, name = ?7, reasoning = ?8, reasoning_signature = ?9, tool_status = ?10, \
     status = COALESCE(?11, status), response_completed_at = COALESCE(?12, response_completed_at), \
     silent = COALESCE(?13, silent), provider_blocks = ?14 WHERE id = ?1 AND session_id = ?2";

/// A new status, completion time and silent flag for row `?1` of session `?2` (NULL keeps the
/// stored one).
pub(super) const UPDATE_STATE: &str = "UPDATE messages SET status = COALESCE(?3, status), \
     response_completed_at = COALESCE(?4, response_completed_at), silent = COALESCE(?5, silent) \
     WHERE id = ?1 AND session_id = ?2";

/// Deletes row `?1` of session `?2`.
pub(super) const DELETE: &str = "DELETE FROM messages WHERE id = ?1 AND session_id = ?2";

/// Why a row could not be read back.
#[derive(Debug)]
pub(super) enum RowError {
    /// The database could not produce a column.
    Sqlite(rusqlite::Error),
    /// The row's values make no message (the row's id and what is wrong).
    Malformed(i64, String),
}

impl From<rusqlite::Error> for RowError {
    fn from(error: rusqlite::Error) -> Self {
        RowError::Sqlite(error)
    }
}

/// The stored message in a row selected with [`SELECT_SESSION`].
pub(super) fn stored(row: &Row<'_>) -> Result<StoredMessage, RowError> {
    let id: i64 = row.get(0)?;
    let columns = MessageRow {
        id,
        session_id: row.get(1)?,
        role: row.get(2)?,
        content: row.get(3)?,
        tool_calls: row.get(4)?,
        tool_call_id: row.get(5)?,
        name: row.get(6)?,
        reasoning: row.get(7)?,
        reasoning_signature: row.get(8)?,
        created_at: row.get(9)?,
        request_sent_at: row.get(10)?,
        response_completed_at: row.get(11)?,
        status: row.get(12)?,
        silent: row.get(13)?,
        tool_status: row.get(14)?,
        provider_blocks: row.get(15)?,
    };
    columns
        .into_stored()
        .map_err(|what| RowError::Malformed(id, what))
}
