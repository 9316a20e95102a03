//! A [`StoredMessage`] as columns: each [`Message`](agent_core::Message) variant maps onto the role, content and the
//! columns it uses, and back (the same columns as `SqliteStore`'s).

use agent_core::{MessageRow, StoredMessage};
use tokio_postgres::Row;

/// Whether a session has any row.
pub(crate) const HAS_ROWS: &str = "SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = $1)";

/// A session's rows, oldest first, in the column order [`stored`] reads.
pub(crate) const SELECT_SESSION: &str = "SELECT id, session_id, role, content, tool_calls, \
     tool_call_id, name, reasoning, reasoning_signature, created_at, request_sent_at, \
     response_completed_at, status, silent, tool_status, provider_blocks \
     FROM messages WHERE session_id = $1 ORDER BY id";

/// A new row: session, the message's columns (as [`MessageColumns`](agent_core::MessageColumns) orders them),
/// request_sent_at, status, silent and provider blocks. The server's clock gives `created_at`
/// (µs since the Unix epoch), so rows written from several machines share one clock.
pub(crate) const INSERT: &str = "INSERT INTO messages (session_id, role, content, tool_calls, \
     tool_call_id, name, reasoning, reasoning_signature, tool_status, request_sent_at, status, \
     silent, provider_blocks, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
     (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) \
     RETURNING id, created_at";

/// A new message, status, completion time and silent flag for row `$1` of session `$2` (a NULL
/// status, time or flag keeps the stored one).
pub(crate) const UPDATE_MESSAGE: &str = "UPDATE messages SET role = $3, content = $4, \
     tool_calls = $5, tool_call_id = $6, name = $7, reasoning = $8, reasoning_signature = $9, \
     tool_status = $10, status = COALESCE($11, status), \
     response_completed_at = COALESCE($12, response_completed_at), \
     silent = COALESCE($13, silent), provider_blocks = $14 WHERE id = $1 AND session_id = $2";

/// A new status, completion time and silent flag for row `$1` of session `$2` (NULL keeps the
/// stored one).
pub(crate) const UPDATE_STATE: &str = "UPDATE messages SET status = COALESCE($3, status), \
     response_completed_at = COALESCE($4, response_completed_at), \
     silent = COALESCE($5, silent) WHERE id = $1 AND session_id = $2";

/// Deletes row `$1` of session `$2`.
pub(crate) const DELETE: &str = "DELETE FROM messages WHERE id = $1 AND session_id = $2";

/// Why a row could not be read back.
#[derive(Debug)]
pub(crate) enum RowError {
    /// The server could not produce a column (or its type is not the one expected).
    Postgres(tokio_postgres::Error),
    /// The row's values make no message (the row's id and what is wrong).
    Malformed(i64, String),
}

impl From<tokio_postgres::Error> for RowError {
    fn from(error: tokio_postgres::Error) -> Self {
        RowError::Postgres(error)
    }
}

/// The stored message in a row selected with [`SELECT_SESSION`].
pub(crate) fn stored(row: &Row) -> Result<StoredMessage, RowError> {
    let id: i64 = row.try_get(0)?;
    let columns = MessageRow {
        id,
        session_id: row.try_get(1)?,
        role: row.try_get(2)?,
        content: row.try_get(3)?,
        tool_calls: row.try_get(4)?,
        tool_call_id: row.try_get(5)?,
        name: row.try_get(6)?,
        reasoning: row.try_get(7)?,
        reasoning_signature: row.try_get(8)?,
        created_at: row.try_get(9)?,
        request_sent_at: row.try_get(10)?,
        response_completed_at: row.try_get(11)?,
        status: row.try_get(12)?,
        silent: row.try_get(13)?,
        tool_status: row.try_get(14)?,
        provider_blocks: row.try_get(15)?,
    };
    columns
        .into_stored()
        .map_err(|what| RowError::Malformed(id, what))
}
