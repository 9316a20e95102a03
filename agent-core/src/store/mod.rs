//! Where conversations live between turns: the [`SessionStore`] seam, its rows (docs/design.md §7), and
//! the in-memory store. The engine inserts the user's message when a turn starts, each assistant
//! message `pending` when its model call starts and `completed` (or `failed`, with its partial
//! content) when it ends, and each tool result as it arrives.

mod columns;
mod guard;
mod hold;
mod lease;
mod memory;
mod pending;
mod seal;
mod sqlite;

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall};
use crate::text::Text;
use crate::util::BoxFuture;

pub use columns::{ExpectedTable, MessageColumns, MessageRow, missing_from_schema};
pub(crate) use guard::PanicSafe;
pub use hold::SessionHold;
pub use lease::{LeaseHolder, ReleaseTurn, TurnLease, TurnLocks};
pub use memory::MemoryStore;
pub use pending::{CallAnswer, PendingCall, PendingKind, SubagentTurn, SuspendedCall};
pub(crate) use pending::{is_standing, standing_name, units};
pub(crate) use seal::{call_token, fingerprint, same_token};
pub use sqlite::{SqliteOptions, SqliteStore, SqliteSync};

/// A failure of the session store: its [`kind`](Self::kind) to branch on, and a message that
/// names the store and, when it can, says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

/// What kind of failure a [`StoreError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Another process or connection holds the database's lock (after the busy timeout).
    Locked,
    /// The file is not a database, or the database or one of its rows is corrupt.
    Corrupt,
    /// The database was written by a newer version (a schema this build does not know).
    NewerSchema,
    /// The database (or its directory) cannot be written by this process.
    Unwritable,
    /// The disk or the file system failed (disk full, I/O error, cannot open the file).
    Io,
    /// The database server cannot be reached (refused, timed out, shutting down, or the
    /// connection dropped).
    Unreachable,
    /// The server refused the credentials.
    Auth,
    /// Another transaction's concurrent write conflicted with this one (a serialization
    /// failure, a deadlock or a duplicate key); trying again may succeed.
    Conflict,
    /// The row the call names is not in the session.
    NotFound,
    /// A message hook refused the write (`inject_message`).
    Hook,
    /// The store panicked (the panic was caught).
    Panicked,
    /// Anything else.
    Other,
}

impl StoreError {
    /// An error of this kind.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// Where a stored message stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// Being produced (an assistant message whose model call is running).
    Pending,
    /// Complete.
    Completed,
    /// Ended by an error or an abort; holds the partial content.
    Failed,
}

impl MessageStatus {
    /// The status's name: `pending`, `completed` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            MessageStatus::Pending => "pending",
            MessageStatus::Completed => "completed",
            MessageStatus::Failed => "failed",
        }
    }

    /// The status with this name.
    pub fn parse(name: &str) -> Option<MessageStatus> {
        match name {
            "pending" => Some(MessageStatus::Pending),
            "completed" => Some(MessageStatus::Completed),
            "failed" => Some(MessageStatus::Failed),
            _ => None,
        }
    }
}

/// How a tool call ended, on a tool row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The model received a valid result.
    Success,
    /// The model received an error.
    Error,
}

impl ToolStatus {
    /// The status a tool row of `message` carries: `None` for any other message.
    pub fn of(message: &Message) -> Option<ToolStatus> {
        match message {
            Message::Tool { is_error: true, .. } => Some(ToolStatus::Error),
            Message::Tool { .. } => Some(ToolStatus::Success),
            _ => None,
        }
    }

    /// The name it is stored under: `success` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Success => "success",
            ToolStatus::Error => "error",
        }
    }
}

/// One stored message (a row, docs/design.md §7). Role, content, tool calls, tool call id and name are
/// those of [`StoredMessage::message`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The row's id, increasing in insertion order within a store.
    pub id: i64,
    /// The session it belongs to.
    pub session_id: Text,
    /// The message.
    pub message: Message,
    /// When the row was inserted (µs since the Unix epoch).
    pub created_at: i64,
    /// When its model call was sent (assistant rows).
    pub request_sent_at: Option<i64>,
    /// When its model call completed (assistant rows).
    pub response_completed_at: Option<i64>,
    /// Where it stands.
    pub status: MessageStatus,
    /// Hidden from the model and from transcripts shown to people.
    pub silent: bool,
    /// How its tool call ended (tool rows).
    pub tool_status: Option<ToolStatus>,
}

/// A row to insert; the store gives it its id and `created_at`.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    /// The message.
    pub message: Message,
    /// Where it stands.
    pub status: MessageStatus,
    /// When its model call was sent.
    pub request_sent_at: Option<i64>,
    /// Hidden from the model.
    pub silent: bool,
}

impl NewMessage {
    /// A completed, visible row.
    pub fn completed(message: Message) -> Self {
        NewMessage {
            message,
            status: MessageStatus::Completed,
            request_sent_at: None,
            silent: false,
        }
    }
}

/// Changes to a stored row: every field left `None` stays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageUpdate {
    /// The new message content.
    pub message: Option<Message>,
    /// The new status.
    pub status: Option<MessageStatus>,
    /// When the model call completed.
    pub response_completed_at: Option<i64>,
    /// Hides the row from the model (or shows it again).
    pub silent: Option<bool>,
}

/// What a store did with a write the engine offered it on the spot
/// ([`SessionStore::insert_id_now`], [`SessionStore::update_now`]).
#[derive(Debug)]
pub enum NowOrLater<T, W> {
    /// Done on the spot: what the awaited call would have given.
    Now(Result<T, StoreError>),
    /// Not done: the write, handed back unwritten for the engine to await the store's own call.
    Later(W),
}

/// A store of sessions' messages. Implementations must keep a session's rows in `id` order and
/// must not block the async runtime (an embedded database does its work on a blocking thread).
pub trait SessionStore: Send + Sync {
    /// Every row of the session, oldest first.
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>>;

    /// Whether the session has any row: whether a turn is its first (on_session_start). The
    /// default loads the rows; a store that can answer without reading them all should.
    fn has_rows<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(!self.load(session).await?.is_empty()) })
    }

    /// The messages a model reads of the session (its completed rows that are not silent,
    /// oldest first), when the session needs no repair and nothing reads its rows: what the
    /// engine asks first for a turn with no filter_messages hook, on a session with no call
    /// waiting. `None` when the session must be repaired first (it has a pending row, or a
    /// call of its last step has no result) or the store does not answer this (the default):
    /// the engine then [`load`](Self::load)s the rows. [`MemoryStore`]
    /// answers it without building each row (`whole_turn_history_agent` in
    /// agent-providers/benches/stream.rs).
    ///
    /// `capacity(n)` is the capacity a history of `n` messages should be given: the room for
    /// what the turn adds. A store that builds the vector allocates that much, so the turn's
    /// pushes never move the whole history into a larger one.
    fn load_history<'a>(
        &'a self,
        session: &'a str,
        capacity: &'a (dyn Fn(usize) -> usize + Sync),
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        let _ = (session, capacity);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The history [`load_history`](Self::load_history) gave for `session`, back at the end
    /// of the turn that read it, with the messages the turn added pushed after it (only when
    /// the turn changed nothing before them). A store that lends what it keeps, instead of
    /// copying it for each turn, takes it back here when it is what its rows now show
    /// ([`MemoryStore`]: a long session's turn then neither copies nor frees its history,
    /// `whole_turn_history_agent` in agent-providers/benches/stream.rs); any other store drops
    /// it (the default).
    fn keep_history(&self, session: &str, messages: Vec<Message>) {
        let _ = (session, messages);
    }

    /// Whether [`keep_history`](Self::keep_history) may keep a history of `messages` messages:
    /// the engine offers a history back only when this says so. `false` (the default) for a
    /// store that keeps none; [`MemoryStore`] keeps those of 64 messages or more.
    fn keeps_history(&self, messages: usize) -> bool {
        let _ = messages;
        false
    }

    /// Whether every history [`load_history`](Self::load_history) gives is paired
    /// ([`is_paired`](crate::is_paired)), the store returning `None` for a session whose
    /// messages are not. The engine then sends a lent history as it is; otherwise (the
    /// default) it checks each one, a pass over the whole history every turn, and pairs one
    /// that is not. [`MemoryStore`] says so.
    fn lends_paired(&self) -> bool {
        false
    }

    /// Inserts a row and returns it as stored.
    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>>;

    /// Inserts a row and returns its id alone: what the engine calls when no
    /// after_create_message hook reads the stored row. By default [`insert`](Self::insert)
    /// with the row dropped (one box more, nothing against a database's write); a store whose
    /// returned row is a second copy of what it keeps overrides it to skip making that row
    /// ([`MemoryStore`]: `agent_turn_memory` in agent-core/benches/store.rs).
    fn insert_id<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        let inserted = self.insert(session, row);
        Box::pin(async move { inserted.await.map(|stored| stored.id) })
    }

    /// Updates a row of the session.
    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// [`insert_id`](Self::insert_id) done on the spot, for a store whose writes never wait
    /// (one in process memory): `Now` with what `insert_id` would give, or `Later` handing the
    /// row back, unwritten, for the engine to await `insert_id` (the default, right for a
    /// store that does I/O). The engine asks this first wherever it would call `insert_id`:
    /// a store that answers saves the boxed future of each write ([`MemoryStore`]:
    /// `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    fn insert_id_now(&self, session: &str, row: NewMessage) -> NowOrLater<i64, NewMessage> {
        let _ = session;
        NowOrLater::Later(row)
    }

    /// [`update`](Self::update) done on the spot, as [`insert_id_now`](Self::insert_id_now):
    /// `Later` hands the update back for the engine to await `update` (the default).
    fn update_now(
        &self,
        session: &str,
        id: i64,
        update: MessageUpdate,
    ) -> NowOrLater<(), MessageUpdate> {
        let _ = (session, id);
        NowOrLater::Later(update)
    }

    /// Deletes a row of the session. The engine deletes only the pending assistant row of a
    /// model call that produced nothing (no text, no tool call), so that no empty assistant
    /// message is ever stored.
    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes the turn of `session`, so that turns of one session never overlap: whichever agent
    /// or handle of this process runs them (every agent sharing this store), and, for a store
    /// that several processes share, whichever process. With `wait`, waits until the running
    /// turn gives it back; otherwise `Ok(None)` at once while another turn holds it. Dropping
    /// the returned future must leave nothing held.
    ///
    /// A store in one process embeds a [`TurnLocks`] and answers with
    /// `TurnLocks::lock(session, wait)` wrapped in [`TurnLease::local`].
    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>>;

    /// The tool calls of `session` waiting for an answer (see [`SuspendedCall`]), in the
    /// model's call order. The default keeps none.
    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Replaces the waiting calls of `session` with `calls` (none: the session has no call
    /// waiting), atomically. The engine writes them under the session's turn lock. The default
    /// keeps none: it accepts an empty list and refuses any other, so a turn on such a store
    /// cannot suspend (it ends with a store error).
    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = session;
        let result = if calls.is_empty() {
            Ok(())
        } else {
            Err(StoreError::new(
                StoreErrorKind::Other,
                "this store cannot keep suspended tool calls: implement \
                 `SessionStore::suspended` and `SessionStore::set_suspended`",
            ))
        };
        Box::pin(std::future::ready(result))
    }

    /// The tools of `session` whose calls run without asking for approval (a standing
    /// approval: [`CallAnswer::ApproveAlways`]). The default keeps none.
    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Replaces the tools of `session` approved for good. The default keeps none: it accepts
    /// an empty list and refuses any other.
    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = session;
        let result = if tools.is_empty() {
            Ok(())
        } else {
            Err(StoreError::new(
                StoreErrorKind::Other,
                "this store cannot keep standing approvals: implement \
                 `SessionStore::approved_tools` and `SessionStore::set_approved_tools`",
            ))
        };
        Box::pin(std::future::ready(result))
    }

    /// A handle on `session` was opened ([`Conversation`](crate::Conversation) and its clones
    /// each count once). A store that keeps sessions in process memory uses this with
    /// [`release`](Self::release) to free a session nobody holds; a persistent store ignores it
    /// (the default).
    fn retain(&self, session: &str) {
        let _ = session;
    }

    /// A handle on `session` was dropped (see [`retain`](Self::retain)).
    fn release(&self, session: &str) {
        let _ = session;
    }

    /// Keeps `hold`, a hold on another session that `session`'s waiting calls will resume (a
    /// subagent's suspended turn, in its own store), until [`take_hold`](Self::take_hold)
    /// takes it back or `session` is freed: a store that frees sessions (see
    /// [`retain`](Self::retain)) drops the holds a session kept when it frees the session, so
    /// the subagent's session is freed with it. The default keeps the hold for good
    /// ([`SessionHold::keep`]), as a store that never frees a session must.
    fn keep_hold(&self, session: &str, hold: SessionHold) {
        let _ = session;
        hold.keep();
    }

    /// Takes back the hold on `held` that `session` keeps ([`keep_hold`](Self::keep_hold)),
    /// if it keeps one. The default keeps none.
    fn take_hold(&self, session: &str, held: &str) -> Option<SessionHold> {
        let _ = (session, held);
        None
    }
}

/// The messages a model reads from stored rows: completed ones, not silent. Failed and pending
/// assistant rows stay in the store (a person may want to see them) but not in the history.
/// Calls are paired with their results within each step ([`crate::message::paired`]), so what
/// the model reads is valid even where the stored rows are not.
/// The rows are taken, not borrowed: their messages move into the history rather than being
/// copied (a copy of the whole history per turn: `whole_turn_history_*` in
/// agent-providers/benches/stream.rs).
pub(crate) fn history(rows: Vec<StoredMessage>) -> Vec<Message> {
    crate::message::paired(
        rows.into_iter()
            .filter(|row| row.status == MessageStatus::Completed && !row.silent)
            .map(|row| row.message)
            .collect(),
    )
}

/// The history of a session whose last step waits on suspended calls (those of the assistant
/// row `row`), as a resumed turn reads it: [`history`] up to that row, then the row with every
/// call and the results stored so far. The resumed turn appends the waiting calls' results
/// before any model reads it.
pub(crate) fn history_resuming(mut rows: Vec<StoredMessage>, row: i64) -> Vec<Message> {
    let at = rows.iter().position(|r| r.id == row).unwrap_or(rows.len());
    let rest = rows.split_off(at);
    let mut messages = history(rows);
    messages.extend(
        rest.into_iter()
            .filter(|row| row.status == MessageStatus::Completed && !row.silent)
            .map(|row| row.message),
    );
    messages
}

/// What a session needs after a turn was cut off without ending (the process was killed): its
/// pending rows marked failed, and an error result for each tool call that never got one (but
/// the suspended calls, which wait for an answer), so every tool call in the history stays
/// paired with its result.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Repairs {
    /// Rows still pending: no live turn owns them.
    pub stale: Vec<i64>,
    /// Error results for tool calls of completed assistant rows that have none.
    pub unanswered: Vec<Message>,
}

/// Finds what [`Repairs`] a session's rows need. The engine applies them under the session's
/// turn lock before a turn reads the history (so one process must own a session at a time).
pub(crate) fn repairs(rows: &[StoredMessage], suspended: &[SuspendedCall]) -> Repairs {
    let stale = rows
        .iter()
        .filter(|row| row.status == MessageStatus::Pending)
        .map(|row| row.id)
        .collect();
    Repairs {
        stale,
        unanswered: unanswered(rows, suspended),
    }
}

/// Whether a call of the last step of `rows` (each's status and message, oldest first) has no
/// result: with a pending row (no live turn owns it), what makes a session with no call
/// waiting need the engine's repairs ([`repairs`]) before a turn reads it. It reads only the
/// rows from the last step's reply on.
pub(crate) fn last_step_open<'r, R: 'r>(
    rows: &'r [R],
    view: impl Fn(&'r R) -> (MessageStatus, &'r Message) + Copy,
) -> bool {
    last_step(rows, view)
        .is_some_and(|(_, calls, answered)| open_calls(calls, answered).next().is_some())
}

/// A stored row as [`last_step`] reads it.
fn stored_view(row: &StoredMessage) -> (MessageStatus, &Message) {
    (row.status, &row.message)
}

/// The last step of `rows`: its assistant row's position and tool calls, and the ids of the
/// results stored after it. `None` when there is no completed assistant row, or a completed
/// row after it is not a tool result (then the step was answered and went on).
fn last_step<'r, R: 'r>(
    rows: &'r [R],
    view: impl Fn(&'r R) -> (MessageStatus, &'r Message) + Copy,
) -> Option<(usize, &'r [ToolCall], Vec<&'r str>)> {
    let last = rows.iter().rposition(|row| {
        let (status, message) = view(row);
        status == MessageStatus::Completed && matches!(message, Message::Assistant { .. })
    })?;
    let Message::Assistant { tool_calls, .. } = view(&rows[last]).1 else {
        return None;
    };
    // Failed and pending rows (a reply cut off after the results) are not in the history.
    let window = rows[last + 1..]
        .iter()
        .map(view)
        .filter(|(status, _)| *status == MessageStatus::Completed);
    let mut answered = Vec::new();
    for (_, message) in window {
        let Message::Tool { call_id, .. } = message else {
            return None;
        };
        answered.push(call_id.as_str());
    }
    Some((last, tool_calls, answered))
}

/// The calls of `calls` that none of `answered` answers (each id answers one call).
fn open_calls<'c>(
    calls: &'c [ToolCall],
    mut answered: Vec<&'c str>,
) -> impl Iterator<Item = &'c ToolCall> {
    calls.iter().filter(
        move |call| match answered.iter().position(|id| *id == call.id) {
            Some(at) => {
                answered.swap_remove(at);
                false
            }
            None => true,
        },
    )
}

/// An error result for each call of the last step that has none. Calls pair with the results
/// stored right after their assistant row (ids are only unique within a step); only the
/// session's last step can be cut off, and its results are appended where they belong. An
/// older unanswered call cannot be answered in place: [`history`] leaves it out instead.
fn unanswered(rows: &[StoredMessage], suspended: &[SuspendedCall]) -> Vec<Message> {
    let Some((last, tool_calls, answered)) = last_step(rows, stored_view) else {
        return Vec::new();
    };
    let mut open: Vec<&ToolCall> = open_calls(tool_calls, answered).collect();
    // The suspended calls of this step wait for their answer, not for a repair (the calls
    // waiting in one subagent call wait in that one call of the step). Ids are only unique
    // within a step as far as the model made them so: the call of the waiting call's tool is
    // taken first.
    for unit in units(suspended) {
        let waiting = &unit[0];
        if waiting.row != rows[last].id {
            continue;
        }
        let (id, tool) = (waiting.step_call_id(), waiting.step_call_tool());
        let same = |call: &&ToolCall| call.id == id;
        let at = open
            .iter()
            .position(|call| same(call) && call.name == tool)
            .or_else(|| open.iter().position(same));
        if let Some(at) = at {
            open.remove(at);
        }
    }
    open.into_iter()
        .map(|call| Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: format!(
                "tool `{}` did not finish: its turn was interrupted",
                call.name
            )
            .into(),
            is_error: true,
        })
        .collect()
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}
