//! A store in process memory: for tests, one-shot runs, and agents that need no history after
//! they exit.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use super::{
    MessageStatus, MessageUpdate, NewMessage, NowOrLater, SessionHold, SessionStore, StoreError,
    StoreErrorKind, StoredMessage, SuspendedCall, ToolStatus, TurnLease, TurnLocks, last_step_open,
    now_micros,
};
use crate::message::{self, Message};
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
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// One turn at a time per session, for every agent using this store.
    locks: TurnLocks,
    /// The number of rows from which a session's history is kept ([`KEEP_FROM`]).
    keep_from: usize,
}

/// A session's history is kept (see [`History`]) from this many messages on, from the row
/// that reaches it or from the turn that gives it back: a shorter one costs less to copy for
/// each turn (about 240 instructions a message) than to keep (120 bytes a message, which an
/// idle session would hold: `cargo bench -p agent-core --bench sessions`); a long one is
/// neither copied nor freed per turn (`whole_turn_conversation_agent` and
/// `whole_turn_history_agent` in agent-providers/benches/stream.rs).
const KEEP_FROM: usize = 64;

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            inner: Mutex::default(),
            locks: TurnLocks::default(),
            keep_from: KEEP_FROM,
        }
    }
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
    /// The messages a model reads of its rows, kept from turn to turn or lent to a turn.
    history: History,
    /// How many rows are pending: a session with one needs a repair, and lends nothing.
    pending: usize,
    /// The calls the session waits on, when it is suspended.
    suspended: Vec<SuspendedCall>,
    /// The tools approved for good.
    approved: Vec<String>,
    /// How many handles hold it (see [`SessionStore::retain`]).
    holders: usize,
    /// The holds on the sessions its waiting calls resume (subagents' suspended turns), dropped
    /// with it (see [`SessionStore::keep_hold`]).
    holds: Vec<SessionHold>,
}

/// The messages a model reads of a session's rows (the completed ones that are not silent), in
/// order. `load_history` lends them to a turn instead of copying every message into a new
/// vector, and the turn gives them back with its own messages pushed (`keep_history`): a long
/// session's turn neither copies nor frees its history (`whole_turn_conversation_agent` in
/// agent-providers/benches/stream.rs).
#[derive(Debug, Default)]
enum History {
    /// Nothing kept yet: a session's history is kept from its [`KEEP_FROM`]th row on, as its
    /// rows are inserted (`Inner::push`), so that even its first turn lends it instead of
    /// copying every message (`whole_turn_history_agent` in agent-providers/benches/stream.rs);
    /// until then the next load copies the rows' messages.
    #[default]
    Unkept,
    /// Nothing kept: the next load copies the rows' messages. One a change to a row made
    /// stale, one that cannot come back, or one shorter than [`KEEP_FROM`] given back.
    Copied,
    /// Kept, in step with the rows as they are inserted; its first `checked` messages are
    /// known to be paired (see [`SessionStore::lends_paired`]), the rest are checked when it
    /// is next lent.
    Kept {
        messages: Vec<Message>,
        checked: usize,
    },
    /// Lent to a turn when the session had `rows` rows, `visible` of them read by a model.
    Lent { rows: usize, visible: usize },
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
    /// The messages a model reads, with room for `capacity`; `None` when a repair is due (a
    /// pending row, a call of the last step without a result, or messages that are not
    /// paired). The kept vector itself when it is here, else a copy of the rows' messages;
    /// either way lent until `keep_history`. Only what was not checked yet is checked: the
    /// messages a kept vector gained since it was last lent, or a whole copy.
    fn lend(&mut self, capacity: &dyn Fn(usize) -> usize) -> Option<Vec<Message>> {
        if self.pending > 0 || last_step_open(&self.rows, |row| (row.status, &row.message)) {
            return None;
        }
        let rows = self.rows.len();
        // What stays when nothing is lent (rows that are not paired): the next load copies.
        let (messages, history) = match std::mem::replace(&mut self.history, History::Copied) {
            // As it is: it grows by doubling as turns push onto it (room made for each turn
            // would move it all each time). A paired start followed by paired messages is
            // paired: a paired start ends with a whole step, and paired messages do not start
            // with a result.
            History::Kept { messages, checked } => {
                if !messages.get(checked..).is_some_and(message::is_paired) {
                    self.history = History::Kept { messages, checked };
                    return None;
                }
                (messages, None)
            }
            // Lent twice (a turn dropped before it gave its copy back, or a second reader):
            // neither copy is taken back, since either may hold what the other's turn added.
            History::Lent { .. } => (self.copy(capacity(rows))?, Some(History::Copied)),
            History::Unkept | History::Copied => (self.copy(capacity(rows))?, None),
        };
        let visible = messages.len();
        self.history = history.unwrap_or(History::Lent { rows, visible });
        Some(messages)
    }

    /// A copy of the visible messages, in a vector of `room`. One pass over the rows, which a
    /// long session holds more of than the caches do (a second pass cost a cache miss per
    /// row); sized up front: a filtered `collect` grows from empty, copying what it holds at
    /// each doubling (`whole_turn_history_agent` in agent-providers/benches/stream.rs).
    /// `None` when they are not paired.
    fn copy(&self, room: usize) -> Option<Vec<Message>> {
        let mut messages = Vec::with_capacity(room);
        for row in self.rows.iter().filter(|row| row.visible()) {
            messages.push(row.message.clone());
        }
        message::is_paired(&messages).then_some(messages)
    }

    /// Takes back the lent messages, with the turn's own pushed after them: kept when there
    /// are at least `keep_from` and they are what the rows now show (the rows the turn added,
    /// compared one by one; the messages before them are those lent, which the engine gives
    /// back only unchanged), handed back otherwise.
    fn take_back(&mut self, messages: Vec<Message>, keep_from: usize) -> Option<Vec<Message>> {
        let History::Lent { rows, visible } = self.history else {
            return Some(messages);
        };
        self.history = History::Copied;
        if messages.len() < keep_from {
            return Some(messages);
        }
        let added = self.rows.get(rows..).unwrap_or_default();
        let mut added = added
            .iter()
            .filter(|row| row.visible())
            .map(|row| &row.message);
        let same = messages
            .get(visible..)
            .is_some_and(|tail| tail.iter().eq(&mut added));
        if !same {
            return Some(messages);
        }
        // The lent messages were paired (`lend`); what the turn added is checked next time.
        self.history = History::Kept {
            messages,
            checked: visible,
        };
        None
    }

    /// A change to the row at `at`: the kept messages may no longer be what the rows show,
    /// and a lent copy holding that row can no longer be taken back.
    fn changed(&mut self, at: usize) {
        match self.history {
            History::Lent { rows, .. } if at >= rows => {}
            History::Unkept => {}
            _ => self.history = History::Copied,
        }
    }

    /// Starts keeping the history of a session not kept yet once it has `keep_from` rows and
    /// none pending: one copy of its messages, with room to grow, which the inserts after it
    /// follow. A session that has it kept and made stale again waits for a turn to give it
    /// back: an insert after each change would otherwise copy it all each time.
    /// Rows that are not paired are not kept (see [`SessionStore::lends_paired`]).
    fn keep_from(&mut self, keep_from: usize) {
        if matches!(self.history, History::Unkept)
            && self.rows.len() >= keep_from
            && self.pending == 0
        {
            self.history = match self.copy(2 * self.rows.len()) {
                Some(messages) => History::Kept {
                    checked: messages.len(),
                    messages,
                },
                None => History::Copied,
            };
        }
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
    /// Whether a model reads it: completed, and not silent.
    fn visible(&self) -> bool {
        self.status == MessageStatus::Completed && !self.silent
    }

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

    /// An empty store that keeps every history from turn to turn, however short.
    #[cfg(test)]
    fn keeping_every_history() -> Self {
        MemoryStore {
            keep_from: 0,
            ..Self::default()
        }
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
        let (id, ..) = self.lock().push(session, row, self.keep_from);
        Ok(id)
    }

    /// Applies `update` to the row numbered `id` of `session`.
    fn update_row(&self, session: &str, id: i64, update: MessageUpdate) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let kept = inner.sessions.get_mut(session);
        let Some((kept, at)) = kept.and_then(|kept| position(&kept.rows, id).map(|at| (kept, at)))
        else {
            return Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no message {id} in session `{session}`"),
            ));
        };
        kept.changed(at);
        let row = &mut kept.rows[at];
        if let Some(message) = update.message {
            row.message = message;
        }
        if let Some(status) = update.status {
            let was = std::mem::replace(&mut row.status, status);
            let pending = MessageStatus::Pending;
            kept.pending =
                kept.pending + usize::from(status == pending) - usize::from(was == pending);
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
    fn push(&mut self, session: &str, row: NewMessage, keep_from: usize) -> (i64, i64, &Text) {
        self.next_id += 1;
        let (id, created_at) = (self.next_id, now_micros());
        let kept = self.session(session);
        kept.pending += usize::from(row.status == MessageStatus::Pending);
        if let History::Kept { messages, checked } = &mut kept.history
            && row.status == MessageStatus::Completed
            && !row.silent
        {
            messages.push(row.message.clone());
            // A message that ends a step (not a call, not a result) closes what is unchecked
            // before it: checked now, a few messages, rather than at the next loan, where a
            // history kept from its rows would be checked whole (`whole_turn_history_agent`).
            let ends_step = match &row.message {
                Message::Assistant { tool_calls, .. } => tool_calls.is_empty(),
                Message::Tool { .. } => false,
                _ => true,
            };
            if ends_step {
                if messages.get(*checked..).is_some_and(message::is_paired) {
                    *checked = messages.len();
                } else {
                    // Not paired before a step's end: no message after it pairs it again, so
                    // it is not kept (the next load copies the rows, and lends nothing).
                    kept.history = History::Copied;
                }
            }
        }
        // Built in place: a row moved through a local first is copied once more (`Row` is
        // 176 bytes).
        kept.rows.push(Row {
            id,
            message: row.message,
            created_at,
            request_sent_at: row.request_sent_at,
            response_completed_at: None,
            status: row.status,
            silent: row.silent,
        });
        kept.keep_from(keep_from);
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

    fn has_rows<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let inner = self.lock();
        let has = inner
            .sessions
            .get(session)
            .is_some_and(|kept| !kept.rows.is_empty());
        Box::pin(std::future::ready(Ok(has)))
    }

    /// The kept messages themselves, lent until the turn gives them back (`keep_history`); a
    /// copy of the rows' messages, each shared, when they are out or stale: no row is built
    /// nor moved (`whole_turn_history_agent` in agent-providers/benches/stream.rs).
    fn load_history<'a>(
        &'a self,
        session: &'a str,
        capacity: &'a (dyn Fn(usize) -> usize + Sync),
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        let mut inner = self.lock();
        let messages = match inner.sessions.get_mut(session) {
            None => Some(Vec::new()),
            Some(kept) => kept.lend(capacity),
        };
        Box::pin(std::future::ready(Ok(messages)))
    }

    /// Keeps the lent messages for the next turn when they are what the rows show.
    fn keep_history(&self, session: &str, messages: Vec<Message>) {
        let mut inner = self.lock();
        let refused = match inner.sessions.get_mut(session) {
            Some(kept) => kept.take_back(messages, self.keep_from),
            None => Some(messages),
        };
        // A refused history is freed once the lock is let go, as a released session is.
        drop(inner);
        drop(refused);
    }

    /// From 64 messages on (`KEEP_FROM`).
    fn keeps_history(&self, messages: usize) -> bool {
        messages >= self.keep_from
    }

    /// It checks a copy of its rows' messages whole, a kept history only for what was added
    /// to it since it was last lent (a turn's messages): a long session's turn no longer pays
    /// a pass over its whole history (`whole_turn_conversation_agent` in
    /// agent-providers/benches/stream.rs).
    fn lends_paired(&self) -> bool {
        true
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
        let (id, created_at, session_id) = inner.push(session, row, self.keep_from);
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
        let kept = inner.sessions.get_mut(session);
        let result = match kept.and_then(|kept| position(&kept.rows, id).map(|at| (kept, at))) {
            Some((kept, at)) => {
                kept.changed(at);
                let row = kept.rows.remove(at);
                kept.pending -= usize::from(row.status == MessageStatus::Pending);
                Ok(())
            }
            None => Err(StoreError::new(
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
            // Its holds on subagents' sessions are released then too, which may free them in
            // this store: after the lock is let go.
            let freed = inner.sessions.remove(session);
            drop(inner);
            drop(freed);
        }
    }

    fn keep_hold(&self, session: &str, hold: SessionHold) {
        let mut inner = self.lock();
        match inner.sessions.get_mut(session) {
            Some(kept) => kept.holds.push(hold),
            // A session the store keeps nothing of has no waiting call to resume the held
            // session: the hold is released (after the lock is let go).
            None => {
                drop(inner);
                drop(hold);
            }
        }
    }

    fn take_hold(&self, session: &str, held: &str) -> Option<SessionHold> {
        let mut inner = self.lock();
        let holds = &mut inner.sessions.get_mut(session)?.holds;
        let at = holds.iter().position(|hold| hold.session() == held)?;
        Some(holds.swap_remove(at))
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryStore;
    use crate::message::{self, Message, ToolCall};
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
            tool_calls: vec![call].into(),
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

    /// The visible messages of `store`'s session `s`, as a model reads them from its rows.
    async fn from_rows(store: &MemoryStore) -> Vec<Message> {
        let rows = store.load("s").await.expect("load");
        let visible = rows
            .into_iter()
            .filter(|row| row.status == MessageStatus::Completed && !row.silent);
        visible.map(|row| row.message).collect()
    }

    /// The history `store` lends for session `s` (one is due).
    async fn lent(store: &MemoryStore) -> Vec<Message> {
        let loaded = store.load_history("s", &|n| n).await.expect("load");
        loaded.expect("lent")
    }

    /// A lent history given back with the turn's messages after it is what the next turn
    /// borrows: the same vector, not a copy.
    #[tokio::test]
    async fn a_history_given_back_is_lent_again_without_a_copy() {
        let store = MemoryStore::keeping_every_history();
        for text in ["one", "two"] {
            let row = NewMessage::completed(Message::user(text));
            store.insert("s", row).await.expect("insert");
        }
        let mut history = store.load_history("s", &|n| n).await.expect("load");
        let mut history = history.take().expect("lent");
        assert_eq!(history, from_rows(&store).await);
        for message in [Message::user("three"), Message::assistant("four")] {
            let row = NewMessage::completed(message.clone());
            store.insert("s", row).await.expect("insert");
            history.push(message);
        }
        let pending = NewMessage {
            status: MessageStatus::Pending,
            ..NewMessage::completed(Message::assistant("cut"))
        };
        let id = store.insert("s", pending).await.expect("insert").id;
        let failed = MessageUpdate {
            status: Some(MessageStatus::Failed),
            ..MessageUpdate::default()
        };
        store.update("s", id, failed).await.expect("update");
        let at = history.as_ptr();
        store.keep_history("s", history);
        let again = store.load_history("s", &|n| n).await.expect("load");
        let again = again.expect("lent");
        assert_eq!(again.as_ptr(), at, "the kept vector itself");
        assert_eq!(again, from_rows(&store).await);
    }

    /// Only a paired history is lent: a kept one is checked for what was added to it since it
    /// was lent (a result no call of its step asked for, inserted while it was kept or given
    /// back by a turn; a call left unanswered), a copy of the rows whole; the rows' history
    /// goes on being what the engine pairs itself.
    #[tokio::test]
    async fn a_history_that_is_not_paired_is_not_lent() {
        let store = MemoryStore::keeping_every_history();
        let stray = || NewMessage::completed(kind(3, 0));
        for given_back in [false, true] {
            let session = if given_back { "back" } else { "kept" };
            for of in [0, 2, 3, 1] {
                let row = NewMessage::completed(kind(of, 1));
                store.insert(session, row).await.expect("insert");
            }
            let lent = store.load_history(session, &|n| n).await.expect("load");
            let mut history = lent.expect("paired: lent");
            if given_back {
                // The turn's own messages, stored and pushed, end with a stray result.
                for message in [kind(0, 2), stray().message] {
                    let row = NewMessage::completed(message.clone());
                    store.insert(session, row).await.expect("insert");
                    history.push(message);
                }
                store.keep_history(session, history);
            } else {
                store.keep_history(session, history);
                store.insert(session, stray()).await.expect("insert");
            }
            for _ in 0..2 {
                let lent = store.load_history(session, &|n| n).await.expect("load");
                assert_eq!(lent, None, "{session}");
            }
            // The engine then reads the rows and pairs them: only the stray result is left out.
            let rows = store.load(session).await.expect("load");
            let visible = rows.len();
            let repaired = store::history(rows);
            assert!(message::is_paired(&repaired));
            assert_eq!(repaired.len(), visible - 1, "{session}");
        }
        // A call that a question follows unanswered, inserted while kept: checked at the
        // question, which ends the step, and never lent however many answers follow.
        for of in [0, 2, 0, 1, 0] {
            let row = NewMessage::completed(kind(of, 1));
            store.insert("unanswered", row).await.expect("insert");
        }
        let lent = store
            .load_history("unanswered", &|n| n)
            .await
            .expect("load");
        assert_eq!(lent, None);
        // A copy of rows that are not paired is not lent either.
        store.insert("copied", stray()).await.expect("insert");
        let lent = store.load_history("copied", &|n| n).await.expect("load");
        assert_eq!(lent, None);
    }

    /// A history that is not what the rows show is not kept: one with a message no row holds,
    /// one lent before a row it holds changed, and two lent at once.
    #[tokio::test]
    async fn a_history_unlike_the_rows_is_not_kept() {
        let store = MemoryStore::keeping_every_history();
        let id = store
            .insert("s", NewMessage::completed(Message::user("one")))
            .await
            .expect("insert")
            .id;
        let mut history = lent(&store).await;
        history.push(Message::user("never stored"));
        store.keep_history("s", history);
        assert_eq!(lent(&store).await, from_rows(&store).await);
        // Given back unchanged: the lend before this one was not.
        store.keep_history("s", from_rows(&store).await);
        let history = lent(&store).await;
        let changed = MessageUpdate {
            message: Some(Message::user("uno")),
            ..MessageUpdate::default()
        };
        store.update("s", id, changed).await.expect("update");
        store.keep_history("s", history);
        assert_eq!(lent(&store).await, [Message::user("uno")]);
        store.keep_history("s", from_rows(&store).await);
        let first = lent(&store).await;
        let second = lent(&store).await;
        store.keep_history("s", first);
        store.keep_history("s", second);
        assert_eq!(lent(&store).await, from_rows(&store).await);
    }

    /// The store keeps a history from 64 messages on, from the 64th row inserted: a session's
    /// first turn borrows it as its later turns do, not a copy (told by the room a copy is
    /// made with), and gets the same vector back after giving it back; a shorter history is a
    /// copy each time, and one given back is dropped.
    #[tokio::test]
    async fn only_a_history_of_sixty_four_messages_or_more_is_kept() {
        for (messages, kept) in [(63, false), (64, true)] {
            let store = MemoryStore::new();
            assert_eq!(store.keeps_history(messages), kept);
            for i in 0..messages {
                let row = NewMessage::completed(Message::user(format!("m{i}")));
                store.insert("s", row).await.expect("insert");
            }
            let room = |n| n + 1_000;
            let first = store.load_history("s", &room).await.expect("load");
            let first = first.expect("lent");
            assert_eq!(first.capacity() == messages + 1_000, !kept, "{messages}");
            assert_eq!(first, from_rows(&store).await);
            let at = first.as_ptr();
            store.keep_history("s", first);
            let again = store.load_history("s", &room).await.expect("load");
            let again = again.expect("lent");
            // (A copy may reuse the freed block of the last: only the room tells it apart.)
            assert_eq!(again.capacity() == messages + 1_000, !kept, "{messages}");
            if kept {
                assert_eq!(again.as_ptr(), at);
            }
        }
    }

    /// One change to a session, for [`lent_history_is_always_what_the_rows_show`].
    #[derive(Clone, Debug)]
    enum Change {
        /// A row of a message of this kind (see [`kind`]), with this status and silence.
        Insert(MessageStatus, bool, u8),
        Update(usize, Option<MessageStatus>, Option<bool>, bool),
        Delete(usize),
        Lend,
        GiveBack(bool),
    }

    /// Message `n` of kind `of`: a question, an answer, an answer calling `c`, or `c`'s result.
    fn kind(of: u8, n: usize) -> Message {
        match of {
            0 => Message::user(format!("m{n}")),
            1 => Message::assistant(format!("a{n}")),
            2 => Message::Assistant {
                content: "".into(),
                reasoning: "".into(),
                tool_calls: vec![ToolCall::new("c", "weather", "{}")].into(),
                reasoning_signature: None,
                provider_blocks: Vec::new(),
            },
            _ => Message::Tool {
                call_id: "c".into(),
                name: "weather".into(),
                content: format!("r{n}").into(),
                is_error: false,
            },
        }
    }

    fn change() -> impl proptest::strategy::Strategy<Value = Change> {
        use proptest::prelude::*;
        let status = prop_oneof![
            Just(MessageStatus::Completed),
            Just(MessageStatus::Pending),
            Just(MessageStatus::Failed),
        ];
        prop_oneof![
            (status.clone(), any::<bool>(), 0..4u8)
                .prop_map(|(status, silent, kind)| Change::Insert(status, silent, kind)),
            (
                any::<usize>(),
                proptest::option::of(status),
                proptest::option::of(any::<bool>()),
                any::<bool>()
            )
                .prop_map(|(at, status, silent, text)| Change::Update(at, status, silent, text)),
            any::<usize>().prop_map(Change::Delete),
            Just(Change::Lend),
            any::<bool>().prop_map(Change::GiveBack),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Whatever rows are inserted (questions, answers, calls and results, in any order),
        /// updated and deleted, and whatever is given back (the turn's messages after the lent
        /// ones, or a history with one message more), with histories kept from any number of
        /// rows on, every history lent is the messages of the completed rows that are not
        /// silent, and one is lent exactly when they are paired and no repair is due (no
        /// pending row, no call of the last step without a result).
        #[test]
        fn lent_history_is_always_what_the_rows_show(
            changes in proptest::collection::vec(change(), 1..40),
            keep_from in 0..8usize,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
            runtime.block_on(async {
                let store = MemoryStore {
                    keep_from,
                    ..MemoryStore::default()
                };
                let mut out: Option<(Vec<Message>, usize)> = None;
                let mut n = 0;
                for change in changes.into_iter().chain([Change::Lend]) {
                    n += 1;
                    let rows = store.load("s").await.expect("load");
                    match change {
                        Change::Insert(status, silent, of) => {
                            let row = NewMessage {
                                message: kind(of, n),
                                status,
                                request_sent_at: None,
                                silent,
                            };
                            store.insert("s", row).await.expect("insert");
                        }
                        Change::Update(at, status, silent, text) if !rows.is_empty() => {
                            let update = MessageUpdate {
                                message: text.then(|| Message::user(format!("u{n}"))),
                                status,
                                response_completed_at: None,
                                silent,
                            };
                            let id = rows[at % rows.len()].id;
                            store.update("s", id, update).await.expect("update");
                        }
                        Change::Delete(at) if !rows.is_empty() => {
                            store.delete("s", rows[at % rows.len()].id).await.expect("delete");
                        }
                        Change::Lend => {
                            let pending = rows.iter().any(|row| row.status == MessageStatus::Pending);
                            let open = store::last_step_open(&rows, |row| (row.status, &row.message));
                            let paired = message::is_paired(&from_rows(&store).await);
                            let lent = store.load_history("s", &|n| n).await.expect("load");
                            assert_eq!(lent.is_some(), !pending && !open && paired);
                            if let Some(lent) = lent {
                                assert_eq!(lent, from_rows(&store).await);
                                out = Some((lent, rows.len()));
                            }
                        }
                        Change::GiveBack(honest) => {
                            if let Some((mut history, from)) = out.take() {
                                // What the engine pushes: the messages of the rows added since.
                                let added = rows.iter().skip(from).filter(|row| {
                                    row.status == MessageStatus::Completed && !row.silent
                                });
                                history.extend(added.map(|row| row.message.clone()));
                                if !honest {
                                    history.push(Message::user("never stored"));
                                }
                                store.keep_history("s", history);
                            }
                        }
                        Change::Update(..) | Change::Delete(_) => {}
                    }
                }
            });
        }
    }
}
