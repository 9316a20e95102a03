//! A store in process memory: for tests, one-shot runs, and agents that need no history after
//! they exit.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use super::{
    MessageStatus, MessageUpdate, NewMessage, NowOrLater, SessionStore, StoreError, StoreErrorKind,
    StoredMessage, SuspendedCall, ToolStatus, TurnLease, TurnLocks, last_step_open, now_micros,
};
use crate::message::Message;
use crate::text::Text;
use crate::util::BoxFuture;

/// The answer of a session that keeps nothing of a kind (no waiting call, no standing
/// approval): an empty list, from a future of no size, which `Box::pin` does not allocate
/// (every turn reads the waiting calls, and every turn with tool calls the approvals).
struct Nothing<T>(PhantomData<fn() -> T>);

impl<T> Default for Nothing<T> {
    fn default() -> Self {
        Nothing(PhantomData)
    }
}

impl<T> Future for Nothing<T> {
    type Output = Result<Vec<T>, StoreError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(Vec::new()))
    }
}

/// Sessions kept in process memory, each for as long as a handle holds it.
///
/// A session's rows live while at least one [`Conversation`](crate::Conversation) on it (or a
/// clone of one, or a turn still running on it) is alive, and are freed when the last one is
/// dropped: `Agent::run` leaves nothing behind, and a process that opens conversations for days
/// holds only the live ones. To keep a history across handles, keep one `Conversation` open, or
/// use a persistent store such as [`SqliteStore`](crate::SqliteStore).
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// One turn at a time per session, for every agent using this store.
    locks: TurnLocks,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: i64,
    /// Every session in one map: one key per session, not one per kind of state it keeps.
    /// hashbrown's map with its default hasher (foldhash, seeded at random per map): a turn
    /// looks its session up about fifteen times, and SipHash over the id was half of what this
    /// store added to a turn (`agent_turn_memory` against `agent_turn_no_store` in
    /// agent-core/benches/store.rs).
    sessions: hashbrown::HashMap<String, Session>,
}

/// What the store keeps of one session.
#[derive(Debug, Default)]
struct Session {
    /// The session's id, which every loaded row's `session_id` shares.
    id: Text,
    rows: Vec<Row>,
    /// The calls the session waits on, when it is suspended.
    suspended: Vec<SuspendedCall>,
    /// The tools approved for good.
    approved: Vec<String>,
    /// How many handles hold it (see [`SessionStore::retain`]).
    holders: usize,
}

/// A stored row without its session id (the map's key): each row of an idle session is that
/// much smaller, and an insert makes one copy of the id (the row it returns) instead of two.
#[derive(Debug)]
struct Row {
    id: i64,
    message: Message,
    created_at: i64,
    request_sent_at: Option<i64>,
    response_completed_at: Option<i64>,
    status: MessageStatus,
    silent: bool,
}

impl Session {
    /// The messages of its completed rows that are not silent, with room for `capacity`;
    /// `None` when a repair is due (a pending row, or a call of the last step without a
    /// result). One pass over the rows, which a long session holds more of than the caches do:
    /// the copy itself looks for the pending rows (a pass of its own cost a cache miss per row:
    /// `whole_turn_history_agent` in agent-providers/benches/stream.rs). Sized for every row
    /// and what the turn adds: a filtered `collect` grows from empty, copying what it holds at
    /// each doubling, and a push onto a full vector moves the whole history.
    fn history(&self, capacity: &dyn Fn(usize) -> usize) -> Option<Vec<Message>> {
        let mut messages = Vec::with_capacity(capacity(self.rows.len()));
        for row in &self.rows {
            match row.status {
                MessageStatus::Pending => return None,
                MessageStatus::Completed if !row.silent => messages.push(row.message.clone()),
                _ => {}
            }
        }
        let open = last_step_open(&self.rows, |row| (row.status, &row.message));
        (!open).then_some(messages)
    }

    /// The row numbered `id`.
    fn row_mut(&mut self, id: i64) -> Option<&mut Row> {
        position(&self.rows, id).map(|at| &mut self.rows[at])
    }
}

/// Where the row numbered `id` is in `rows`, found by halving: rows are kept in id order (ids
/// only grow, and a row is inserted at the end). A turn updates its newest rows; a scan from
/// the first row read the whole history for each (`whole_turn_history_agent` in
/// agent-providers/benches/stream.rs).
fn position(rows: &[Row], id: i64) -> Option<usize> {
    rows.binary_search_by_key(&id, |row| row.id).ok()
}

impl Row {
    /// The row as stored in `session`.
    fn stored(&self, session: &Text) -> StoredMessage {
        StoredMessage {
            id: self.id,
            session_id: session.clone(),
            message: self.message.clone(),
            created_at: self.created_at,
            request_sent_at: self.request_sent_at,
            response_completed_at: self.response_completed_at,
            status: self.status,
            silent: self.silent,
            tool_status: ToolStatus::of(&self.message),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions the store holds rows for.
    pub fn session_count(&self) -> usize {
        let inner = self.lock();
        let with_rows = inner.sessions.values();
        with_rows.filter(|session| !session.rows.is_empty()).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Numbers a new row of `session` and keeps it.
    fn insert_row(&self, session: &str, row: NewMessage) -> Result<i64, StoreError> {
        let (id, ..) = self.lock().push(session, row);
        Ok(id)
    }

    /// Applies `update` to the row numbered `id` of `session`.
    fn update_row(&self, session: &str, id: i64, update: MessageUpdate) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let row = inner
            .sessions
            .get_mut(session)
            .and_then(|kept| kept.row_mut(id));
        let Some(row) = row else {
            return Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no message {id} in session `{session}`"),
            ));
        };
        if let Some(message) = update.message {
            row.message = message;
        }
        if let Some(status) = update.status {
            row.status = status;
        }
        if update.response_completed_at.is_some() {
            row.response_completed_at = update.response_completed_at;
        }
        if let Some(silent) = update.silent {
            row.silent = silent;
        }
        Ok(())
    }
}

impl Inner {
    /// The session, made empty if the store keeps nothing of it yet (one lookup; only its
    /// first call pays for its key).
    fn session(&mut self, session: &str) -> &mut Session {
        let new = || Session {
            id: Text::from(session),
            ..Session::default()
        };
        self.sessions.entry_ref(session).or_insert_with(new)
    }

    /// Numbers a new row of `session` and keeps it; gives the row's id and time, and the
    /// session's id as it keeps it.
    fn push(&mut self, session: &str, row: NewMessage) -> (i64, i64, &Text) {
        self.next_id += 1;
        let (id, created_at) = (self.next_id, now_micros());
        let kept = self.session(session);
        kept.rows.push(Row {
            id,
            message: row.message,
            created_at,
            request_sent_at: row.request_sent_at,
            response_completed_at: None,
            status: row.status,
            silent: row.silent,
        });
        (id, created_at, &kept.id)
    }
}

impl SessionStore for MemoryStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        let inner = self.lock();
        // Each row's message and session id are shared with the store's, not copied
        // (`whole_turn_history_agent` in agent-providers/benches/stream.rs).
        let rows = match inner.sessions.get(session) {
            Some(kept) => kept.rows.iter().map(|row| row.stored(&kept.id)).collect(),
            None => Vec::new(),
        };
        Box::pin(std::future::ready(Ok(rows)))
    }

    /// The messages straight from the kept rows, each shared, not copied: no row is built
    /// nor moved (`whole_turn_history_agent` in agent-providers/benches/stream.rs).
    fn load_history<'a>(
        &'a self,
        session: &'a str,
        capacity: &'a (dyn Fn(usize) -> usize + Sync),
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        let inner = self.lock();
        let messages = match inner.sessions.get(session) {
            None => Some(Vec::new()),
            Some(kept) => kept.history(capacity),
        };
        Box::pin(std::future::ready(Ok(messages)))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        // The row handed back shares the message's text and the session's id with the store's.
        let message = row.message.clone();
        let (request_sent_at, status, silent) = (row.request_sent_at, row.status, row.silent);
        let mut inner = self.lock();
        let (id, created_at, session_id) = inner.push(session, row);
        let stored = StoredMessage {
            id,
            session_id: session_id.clone(),
            tool_status: ToolStatus::of(&message),
            message,
            created_at,
            request_sent_at,
            response_completed_at: None,
            status,
            silent,
        };
        Box::pin(std::future::ready(Ok(stored)))
    }

    /// Keeps the row's message itself: no copy of it, nor of the session id, for a row nobody
    /// reads back (`agent_turn_memory` in agent-core/benches/store.rs).
    fn insert_id<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        Box::pin(std::future::ready(self.insert_row(session, row)))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.update_row(session, id, update)))
    }

    /// Done on the spot: nothing here waits.
    fn insert_id_now(&self, session: &str, row: NewMessage) -> NowOrLater<i64, NewMessage> {
        NowOrLater::Now(self.insert_row(session, row))
    }

    /// Done on the spot: nothing here waits.
    fn update_now(
        &self,
        session: &str,
        id: i64,
        update: MessageUpdate,
    ) -> NowOrLater<(), MessageUpdate> {
        NowOrLater::Now(self.update_row(session, id, update))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        let rows = inner.sessions.get_mut(session).map(|kept| &mut kept.rows);
        let at = rows.as_ref().and_then(|rows| position(rows, id));
        let result = match (rows, at) {
            (Some(rows), Some(at)) => {
                rows.remove(at);
                Ok(())
            }
            _ => Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no message {id} in session `{session}`"),
            )),
        };
        Box::pin(std::future::ready(result))
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        match self.lock().sessions.get(session) {
            Some(kept) if !kept.suspended.is_empty() => {
                Box::pin(std::future::ready(Ok(kept.suspended.clone())))
            }
            _ => Box::pin(Nothing::default()),
        }
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        if !calls.is_empty() || inner.sessions.contains_key(session) {
            inner.session(session).suspended = calls;
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        match self.lock().sessions.get(session) {
            Some(kept) if !kept.approved.is_empty() => {
                Box::pin(std::future::ready(Ok(kept.approved.clone())))
            }
            _ => Box::pin(Nothing::default()),
        }
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        if !tools.is_empty() || inner.sessions.contains_key(session) {
            inner.session(session).approved = tools;
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(async move { Ok(self.locks.lock(session, wait).await.map(TurnLease::local)) })
    }

    fn retain(&self, session: &str) {
        self.lock().session(session).holders += 1;
    }

    fn release(&self, session: &str) {
        let mut inner = self.lock();
        let Some(kept) = inner.sessions.get_mut(session) else {
            return;
        };
        if kept.holders == 0 {
            return;
        }
        kept.holders -= 1;
        if kept.holders == 0 {
            // Freed once the lock is let go: a long session's rows take a while to free
            // (about 250 instructions a row, `whole_turn_history_agent` at 1,000 messages in
            // agent-providers/benches/stream.rs), and every other session waits on this lock.
            let freed = inner.sessions.remove(session);
            drop(inner);
            drop(freed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryStore;
    use crate::message::{Message, ToolCall};
    use crate::store::{
        self, MessageStatus, MessageUpdate, NewMessage, SessionStore, StoreErrorKind,
    };

    /// The messages it hands over are those the engine reads from the rows, and it hands them
    /// over whenever no repair is due.
    #[tokio::test]
    async fn load_history_answers_what_the_rows_give() {
        let store = MemoryStore::new();
        let call = ToolCall::new("c1", "weather", "{}");
        let assistant = Message::Assistant {
            content: "Looking.".into(),
            reasoning: "".into(),
            tool_calls: vec![call],
            reasoning_signature: None,
            provider_blocks: Vec::new(),
        };
        let result = Message::Tool {
            call_id: "c1".into(),
            name: "weather".into(),
            content: "sunny".into(),
            is_error: false,
        };
        for message in [Message::user("q"), assistant, result] {
            let row = NewMessage::completed(message);
            store.insert("s", row).await.expect("insert");
        }
        let hidden = NewMessage {
            silent: true,
            ..NewMessage::completed(Message::user("hidden"))
        };
        store.insert("s", hidden).await.expect("insert");
        let rows = store.load("s").await.expect("load");
        // The vector has the room asked for, for the four rows (one of them silent).
        let direct = store
            .load_history("s", &|n| n * 10)
            .await
            .expect("load_history");
        assert_eq!(direct.as_ref().map(Vec::capacity), Some(40));
        assert_eq!(
            direct.map(crate::message::paired),
            Some(store::history(rows))
        );
        assert_eq!(
            store.load_history("none", &|n| n).await.ok(),
            Some(Some(Vec::new()))
        );
        let pending = NewMessage {
            status: MessageStatus::Pending,
            ..NewMessage::completed(Message::assistant(""))
        };
        store.insert("s", pending).await.expect("insert");
        assert_eq!(store.load_history("s", &|n| n).await.ok(), Some(None));
        // A pending row before completed ones is found as well.
        store
            .insert("s", NewMessage::completed(Message::user("later")))
            .await
            .expect("insert");
        assert_eq!(store.load_history("s", &|n| n).await.ok(), Some(None));
    }

    /// Rows are found by id wherever they are, also after a row before them was deleted; an id
    /// the session does not hold (deleted, or never there) is `NotFound`.
    #[tokio::test]
    async fn update_and_delete_find_rows_by_id() {
        let store = MemoryStore::new();
        let mut ids = Vec::new();
        for i in 0..7 {
            let row = NewMessage::completed(Message::user(format!("m{i}")));
            ids.push(store.insert("s", row).await.expect("insert").id);
        }
        store.delete("s", ids[2]).await.expect("delete");
        for (at, id) in ids.iter().enumerate().filter(|(at, _)| *at != 2) {
            let update = MessageUpdate {
                message: Some(Message::user(format!("u{at}"))),
                ..MessageUpdate::default()
            };
            store.update("s", *id, update).await.expect("update");
        }
        let texts: Vec<String> = store
            .load("s")
            .await
            .expect("load")
            .into_iter()
            .map(|row| row.message.text().to_owned())
            .collect();
        assert_eq!(texts, ["u0", "u1", "u3", "u4", "u5", "u6"]);
        let missing = store.update("s", ids[2], MessageUpdate::default()).await;
        assert_eq!(
            missing.map_err(|error| error.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let missing = store.delete("s", ids[6] + 1).await;
        assert_eq!(
            missing.map_err(|error| error.kind()),
            Err(StoreErrorKind::NotFound)
        );
        let missing = store.delete("other", ids[0]).await;
        assert_eq!(
            missing.map_err(|error| error.kind()),
            Err(StoreErrorKind::NotFound)
        );
    }
}
