//! A [`StoredMessage`] as columns: each [`Message`](crate::message::Message) variant maps onto the role, content and the
//! columns it uses, and back.

use rusqlite::Row;
use rusqlite::types::FromSql;

use crate::store::{MessageRow, StoredMessage};

/// A session's rows, oldest first, in the column order [`stored`] reads.
pub(super) const SELECT_SESSION: &str = "SELECT id, session_id, role, content, tool_calls, tool_call_id, name, \
     reasoning, reasoning_signature, created_at, request_sent_at, response_completed_at, status, silent, tool_status, \
     provider_blocks FROM messages WHERE session_id = ?1 ORDER BY id";

/// Whether a session has any row.
pub(super) const HAS_ROWS: &str = "SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = ?1)";

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
        session_id: column(row, id, 1)?,
        role: column(row, id, 2)?,
        content: column(row, id, 3)?,
        tool_calls: column(row, id, 4)?,
        tool_call_id: column(row, id, 5)?,
        name: column(row, id, 6)?,
        reasoning: column(row, id, 7)?,
        reasoning_signature: column(row, id, 8)?,
        created_at: column(row, id, 9)?,
        request_sent_at: column(row, id, 10)?,
        response_completed_at: column(row, id, 11)?,
        status: column(row, id, 12)?,
        silent: column(row, id, 13)?,
        tool_status: column(row, id, 14)?,
        provider_blocks: column(row, id, 15)?,
    };
    columns
        .into_stored()
        .map_err(|what| RowError::Malformed(id, what))
}

/// Column `index` of row `id`. SQLite keeps whatever value a column is given (a blob or
/// invalid UTF-8 where text belongs, text where a number belongs, written by another
/// program): such a value makes the row malformed, naming the column.
fn column<T: FromSql>(row: &Row<'_>, id: i64, index: usize) -> Result<T, RowError> {
    row.get(index).map_err(|error| match error {
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => {
            let name = row.as_ref().column_name(index).unwrap_or("?");
            RowError::Malformed(id, format!("column `{name}` does not read: {error}"))
        }
        other => RowError::Sqlite(other),
    })
}
