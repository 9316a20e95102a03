//! What a suspended turn leaves with its session (tables `suspended_calls` and
//! `approved_tools`, schema version 2): the calls waiting for an answer, each a
//! [`SuspendedCall`] as JSON (the call with its fingerprint and token, its answer once given,
//! its execution record), in the model's call order, and the tools approved for good. Each is
//! replaced as a whole, in one transaction, so another process reads the old list or the new
//! one, never a mix.

use agent_core::{StoreError, StoreErrorKind, SuspendedCall};

use super::PostgresStore;

/// A session's waiting calls, in call order.
const SELECT_CALLS: &str =
    "SELECT record FROM suspended_calls WHERE session_id = $1 ORDER BY position";
/// Forgets a session's waiting calls.
const DELETE_CALLS: &str = "DELETE FROM suspended_calls WHERE session_id = $1";
/// One waiting call: session, position, call id and record.
const INSERT_CALL: &str = "INSERT INTO suspended_calls (session_id, position, call_id, record) \
     VALUES ($1, $2, $3, $4)";
/// A session's tools approved for good, by name.
const SELECT_TOOLS: &str = "SELECT tool FROM approved_tools WHERE session_id = $1 ORDER BY tool";
/// Forgets a session's tools approved for good.
const DELETE_TOOLS: &str = "DELETE FROM approved_tools WHERE session_id = $1";
/// One tool approved for good (a name given twice is kept once).
const INSERT_TOOL: &str = "INSERT INTO approved_tools (session_id, tool) VALUES ($1, $2) \
     ON CONFLICT DO NOTHING";

/// The calls of `session` waiting for an answer, in call order.
pub(crate) async fn load_calls(
    store: &PostgresStore,
    session: &str,
) -> Result<Vec<SuspendedCall>, StoreError> {
    store
        .query(SELECT_CALLS, &[&session])
        .await?
        .iter()
        .map(|found| {
            let record: String = found.try_get(0).map_err(|e| store.server.postgres(&e))?;
            serde_json::from_str(&record).map_err(|e| {
                store.server.of(
                    StoreErrorKind::Corrupt,
                    format_args!("a suspended call of session `{session}` does not read: {e}"),
                )
            })
        })
        .collect()
}

/// Replaces the waiting calls of `session` with `calls`, in one transaction.
pub(crate) async fn store_calls(
    store: &PostgresStore,
    session: &str,
    calls: &[SuspendedCall],
) -> Result<(), StoreError> {
    let records = calls
        .iter()
        .map(|call| {
            serde_json::to_string(call).map_err(|e| {
                store
                    .server
                    .at(format_args!("cannot encode a suspended call: {e}"))
            })
        })
        .collect::<Result<Vec<String>, StoreError>>()?;
    let mut conn = store.conn().await?;
    let written = async {
        let tx = conn.transaction().await?;
        let delete = tx.prepare_cached(DELETE_CALLS).await?;
        tx.execute(&delete, &[&session]).await?;
        let insert = tx.prepare_cached(INSERT_CALL).await?;
        for (position, (call, record)) in (0_i32..).zip(calls.iter().zip(&records)) {
            tx.execute(&insert, &[&session, &position, &call.call.id, record])
                .await?;
        }
        tx.commit().await
    }
    .await;
    written.map_err(|e| store.failed(conn, &e))
}

/// The tools of `session` approved for good, by name.
pub(crate) async fn load_tools(
    store: &PostgresStore,
    session: &str,
) -> Result<Vec<String>, StoreError> {
    store
        .query(SELECT_TOOLS, &[&session])
        .await?
        .iter()
        .map(|found| found.try_get(0).map_err(|e| store.server.postgres(&e)))
        .collect()
}

/// Replaces the tools of `session` approved for good, in one transaction.
pub(crate) async fn store_tools(
    store: &PostgresStore,
    session: &str,
    tools: &[String],
) -> Result<(), StoreError> {
    let mut conn = store.conn().await?;
    let written = async {
        let tx = conn.transaction().await?;
        let delete = tx.prepare_cached(DELETE_TOOLS).await?;
        tx.execute(&delete, &[&session]).await?;
        let insert = tx.prepare_cached(INSERT_TOOL).await?;
        for tool in tools {
            tx.execute(&insert, &[&session, tool]).await?;
        }
        tx.commit().await
    }
    .await;
    written.map_err(|e| store.failed(conn, &e))
}
