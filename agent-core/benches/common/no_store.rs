//! A store that keeps nothing, the floor a real store is measured against: shared by the
//! store benchmark (agent-core/benches/store.rs) and the whole-turn benchmark
//! (agent-providers/benches/stream.rs), each of which includes it with `#[path]`.

use std::sync::atomic::{AtomicI64, Ordering};

use agent_core::{
    BoxFuture, Message, MessageUpdate, NewMessage, NowOrLater, SessionStore, StoreError,
    StoredMessage, TurnLease, TurnLocks,
};

/// A store that keeps nothing: every session reads empty, every write only numbers its row. The
/// turn lock stays (a store must give one), from [`TurnLocks`].
#[derive(Default)]
pub struct NoStore {
    next_id: AtomicI64,
    locks: TurnLocks,
}

impl SessionStore for NoStore {
    fn load<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        let stored = StoredMessage {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            session_id: session.into(),
            tool_status: None,
            message: row.message,
            created_at: 0,
            request_sent_at: row.request_sent_at,
            response_completed_at: None,
            status: row.status,
            silent: row.silent,
        };
        Box::pin(std::future::ready(Ok(stored)))
    }

    fn update<'a>(
        &'a self,
        _: &'a str,
        _: i64,
        _: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn delete<'a>(&'a self, _: &'a str, _: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(async move { Ok(self.locks.lock(session, wait).await.map(TurnLease::local)) })
    }

    /// Every session reads empty: lent as an empty history with the room the turn asks for, so
    /// a turn neither loads rows nor builds its history from them (as on `MemoryStore`, which
    /// lends what it keeps).
    fn load_history<'a>(
        &'a self,
        _: &'a str,
        capacity: &'a (dyn Fn(usize) -> usize + Sync),
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        Box::pin(std::future::ready(Ok(Some(Vec::with_capacity(capacity(
            0,
        ))))))
    }

    /// An empty history is paired.
    fn lends_paired(&self) -> bool {
        true
    }

    /// On the spot, as the engine asks first: no future for a write that does nothing.
    fn insert_id_now(&self, _: &str, _: NewMessage) -> NowOrLater<i64, NewMessage> {
        NowOrLater::Now(Ok(self.next_id.fetch_add(1, Ordering::Relaxed) + 1))
    }

    /// On the spot, as [`insert_id_now`](Self::insert_id_now).
    fn update_now(&self, _: &str, _: i64, _: MessageUpdate) -> NowOrLater<(), MessageUpdate> {
        NowOrLater::Now(Ok(()))
    }
}
