//! One conformance suite for every [`SessionStore`]: rows of every kind round-trip exactly,
//! sessions stay apart in id order, updates change what they name and keep the rest, missing
//! rows are `NotFound`, concurrent inserts all land, the next turn repairs a turn cut off
//! mid-way, one turn at a time holds a session (store calls and whole agents), and a suspended
//! turn's waiting calls (with their answers and execution records) and the standing approvals
//! are kept, seen from another handle, and answered and resumed there; a history given back to
//! the store never changes what it lends next, and a result no call asked for never reaches the
//! model.
//!
//! Each test is an async function over a [`Subject`]: a fresh, empty store and a second handle
//! on the same sessions. [`store_conformance!`](crate::store_conformance) expands to one test per
//! function for a store, so a new store is checked with one line.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    AgentBuilder, CallAnswer, Conversation, FnTool, Message, MessageStatus, MessageUpdate,
    NewMessage, NowOrLater, PendingCall, PendingKind, ScriptedModel, ScriptedStep, SessionStore,
    StoreErrorKind, StoredMessage, SubagentTurn, SuspendedCall, ToolCall, ToolError, ToolStatus,
    TurnStatus,
};
use serde_json::{Value, json};

use crate::{Trace, assert_whole, within};

/// A store under test: fresh and empty.
pub struct Subject {
    /// The store.
    pub store: Arc<dyn SessionStore>,
    /// Another handle on the same sessions: another store on the same file or database (the
    /// same store for one confined to its process).
    pub another: Arc<dyn SessionStore>,
    /// What must live as long as the store (a temporary folder, say).
    pub keep: Box<dyn Any + Send + Sync>,
}

/// Expands to one `#[tokio::test]` per conformance test, each on the subject that the async
/// function `$subject(name: &str) -> Subject` makes for it.
#[macro_export]
macro_rules! store_conformance {
    ($subject:path) => {
        $crate::store_conformance!(
            $subject;
            rows_of_every_kind_round_trip_exactly,
            sessions_are_separate_and_ids_follow_insertion_order,
            insert_id_keeps_the_row_insert_would,
            writes_on_the_spot_keep_what_awaited_ones_keep,
            load_history_is_what_a_model_reads_or_nothing,
            a_history_given_back_never_changes_what_load_history_gives,
            a_result_no_call_asked_for_never_reaches_the_model,
            update_changes_content_status_and_completion_time_and_keeps_the_rest,
            a_row_not_in_the_session_is_not_found,
            has_rows_says_whether_a_session_has_any,
            delete_removes_only_its_row,
            many_concurrent_inserts_all_land,
            the_next_turn_repairs_a_turn_cut_off_mid_way,
            one_turn_at_a_time_per_session,
            a_dropped_lock_turn_leaves_nothing_held,
            two_agents_on_one_store_take_turns,
            two_agents_on_two_handles_take_turns,
            suspended_calls_are_kept_whole_and_replaced_whole,
            standing_approvals_are_kept_and_replaced,
            a_suspended_turn_is_answered_and_resumed_from_another_handle,
        );
    };
    ($subject:path; $($test:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                $crate::conformance::$test($subject(stringify!($test)).await).await;
            }
        )*
    };
}

/// A tool call.
pub fn tool_call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        metadata: None,
    }
}

/// An assistant message with every part: text (not ASCII), reasoning, two tool calls (one with
/// arguments that are not JSON), a signature and provider blocks.
pub fn assistant_with_calls() -> Message {
    Message::Assistant {
        content: "Let me look — ünïcödé ✓".into(),
        reasoning: "The user wants the weather; call two tools.\nLine two.".into(),
        tool_calls: vec![
            tool_call("call_1", "weather", r#"{"city":"Paris"}"#),
            tool_call("call_2", "clock", "{not json"),
        ]
        .into(),
        reasoning_signature: Some("sig-abc123==".into()),
        provider_blocks: vec![
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris"}}),
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        ],
    }
}

/// A tool result.
pub fn tool_result(call_id: &str, name: &str, content: &str, is_error: bool) -> Message {
    Message::Tool {
        call_id: call_id.into(),
        name: name.into(),
        content: content.into(),
        is_error,
    }
}

/// One row of every kind: system, user, assistant (reasoning, tool calls, signature; pending
/// with its request time), tool success, tool error, a silent user row, a failed empty
/// assistant, an assistant with an empty signature.
pub fn every_kind() -> Vec<NewMessage> {
    vec![
        NewMessage::completed(Message::system("You are terse.")),
        NewMessage::completed(Message::user("What's the weather in Paris?")),
        NewMessage {
            message: assistant_with_calls(),
            status: MessageStatus::Pending,
            request_sent_at: Some(1_700_000_000_123_456),
            silent: false,
        },
        NewMessage::completed(tool_result("call_1", "weather", r#"{"temp_c":21}"#, false)),
        NewMessage::completed(tool_result("call_2", "clock", "invalid arguments", true)),
        NewMessage {
            message: Message::user("(a hidden nudge)"),
            status: MessageStatus::Completed,
            request_sent_at: None,
            silent: true,
        },
        NewMessage {
            message: Message::assistant(""),
            status: MessageStatus::Failed,
            request_sent_at: Some(7),
            silent: false,
        },
        NewMessage::completed(Message::Assistant {
            content: Default::default(),
            reasoning: Default::default(),
            tool_calls: Arc::default(),
            reasoning_signature: Some(String::new()),
            provider_blocks: Vec::new(),
        }),
    ]
}

/// The row a store should make of `new` in `session`, given the id and time it chose.
fn expected(session: &str, new: NewMessage, id: i64, created_at: i64) -> StoredMessage {
    let tool_status = match &new.message {
        Message::Tool { is_error: true, .. } => Some(ToolStatus::Error),
        Message::Tool { .. } => Some(ToolStatus::Success),
        _ => None,
    };
    StoredMessage {
        id,
        session_id: session.into(),
        message: new.message,
        created_at,
        request_sent_at: new.request_sent_at,
        response_completed_at: None,
        status: new.status,
        silent: new.silent,
        tool_status,
    }
}

/// Microseconds since the Unix epoch, now.
fn now_micros() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// Every kind of row comes back exactly as it went in, in order, with increasing ids and
/// creation times (µs since the epoch) taken while it was written.
pub async fn rows_of_every_kind_round_trip_exactly(subject: Subject) {
    let store = subject.store;
    let before = now_micros();
    let mut inserted = Vec::new();
    for row in every_kind() {
        inserted.push(store.insert("s1", row).await.expect("insert"));
    }
    let after = now_micros();
    let want: Vec<StoredMessage> = every_kind()
        .into_iter()
        .zip(&inserted)
        .map(|(new, got)| expected("s1", new, got.id, got.created_at))
        .collect();
    assert_eq!(inserted, want, "insert returns the row as stored");
    assert_eq!(store.load("s1").await.expect("load"), want);
    assert!(
        want.windows(2).all(|pair| pair[0].id < pair[1].id),
        "ids increase: {want:#?}"
    );
    assert!(
        want.windows(2)
            .all(|pair| pair[0].created_at <= pair[1].created_at),
        "creation times do not go back: {want:#?}"
    );
    // A server's clock may differ a little from this process's.
    let slack = 5_000_000;
    assert!(
        want.iter()
            .all(|row| row.created_at >= before - slack && row.created_at <= after + slack),
        "created while written ({before}..{after}): {want:#?}"
    );
}

/// Sessions are apart; ids follow insertion order across them; an unknown session is empty.
pub async fn sessions_are_separate_and_ids_follow_insertion_order(subject: Subject) {
    let store = subject.store;
    let a1 = store
        .insert("a", NewMessage::completed(Message::user("a1")))
        .await
        .expect("insert");
    let b1 = store
        .insert("b", NewMessage::completed(Message::user("b1")))
        .await
        .expect("insert");
    let a2 = store
        .insert("a", NewMessage::completed(Message::assistant("a2")))
        .await
        .expect("insert");
    assert!(a1.id < b1.id && b1.id < a2.id, "{a1:?} {b1:?} {a2:?}");
    assert_eq!(store.load("a").await.expect("load a"), [a1, a2]);
    assert_eq!(store.load("b").await.expect("load b"), [b1]);
    assert_eq!(store.load("nobody").await.expect("load"), []);
}

/// `insert_id` (what the engine calls when no hook reads the stored row) keeps the same row as
/// `insert`, numbered in the same sequence, and gives its id.
pub async fn insert_id_keeps_the_row_insert_would(subject: Subject) {
    let store = subject.store;
    let first = store
        .insert("s", NewMessage::completed(Message::user("first")))
        .await
        .expect("insert");
    let pending = NewMessage {
        message: assistant_with_calls(),
        status: MessageStatus::Pending,
        request_sent_at: Some(100),
        silent: true,
    };
    let id = store
        .insert_id("s", pending.clone())
        .await
        .expect("insert_id");
    let last = store
        .insert("s", NewMessage::completed(Message::user("last")))
        .await
        .expect("insert");
    assert!(
        first.id < id && id < last.id,
        "{} {id} {}",
        first.id,
        last.id
    );
    let rows = store.load("s").await.expect("load");
    assert_eq!(rows.len(), 3, "{rows:?}");
    let kept = &rows[1];
    assert_eq!(kept.id, id);
    assert_eq!(kept.session_id, "s");
    assert_eq!(kept.message, pending.message);
    assert_eq!(kept.status, MessageStatus::Pending);
    assert_eq!(kept.request_sent_at, Some(100));
    assert!(kept.silent);
    assert_eq!((&rows[0], &rows[2]), (&first, &last));
}

/// `insert_id_now` and `update_now` (what the engine asks first for its writes) keep what the
/// awaited `insert_id` and `update` keep: done on the spot, or handed back unchanged for the
/// engine to await. An update of a row the session does not hold is `NotFound` either way.
pub async fn writes_on_the_spot_keep_what_awaited_ones_keep(subject: Subject) {
    let store = subject.store;
    let pending = NewMessage {
        message: assistant_with_calls(),
        status: MessageStatus::Pending,
        request_sent_at: Some(100),
        silent: true,
    };
    let update = MessageUpdate {
        message: Some(Message::assistant("done")),
        status: Some(MessageStatus::Completed),
        response_completed_at: Some(200),
        silent: Some(false),
    };
    let awaited = store.insert_id("awaited", pending.clone()).await;
    let awaited = awaited.expect("insert_id");
    let updated = store.update("awaited", awaited, update.clone()).await;
    updated.expect("update");
    let id = match store.insert_id_now("now", pending.clone()) {
        NowOrLater::Now(done) => done.expect("insert_id_now"),
        NowOrLater::Later(row) => {
            assert_eq!(row, pending, "the row handed back is the row given");
            store.insert_id("now", row).await.expect("insert_id")
        }
    };
    let updated = match store.update_now("now", id, update.clone()) {
        NowOrLater::Now(done) => done,
        NowOrLater::Later(back) => {
            assert_eq!(back, update, "the update handed back is the update given");
            store.update("now", id, back).await
        }
    };
    updated.expect("update_now");
    let read = |rows: Vec<StoredMessage>| -> Vec<_> {
        let kept = |row: StoredMessage| {
            let times = (row.request_sent_at, row.response_completed_at);
            (row.message, row.status, times, row.silent)
        };
        rows.into_iter().map(kept).collect()
    };
    let now = read(store.load("now").await.expect("load"));
    assert_eq!(now, read(store.load("awaited").await.expect("load")));
    assert_eq!(now[0].0, Message::assistant("done"));
    let missing = match store.update_now("now", id + 1_000, MessageUpdate::default()) {
        NowOrLater::Now(done) => done,
        NowOrLater::Later(back) => store.update("now", id + 1_000, back).await,
    };
    assert_eq!(
        missing.map_err(|error| error.kind()),
        Err(StoreErrorKind::NotFound)
    );
}

/// The capacity `load_history` is asked for: a history of `n` messages, no room beyond it.
fn exact(n: usize) -> usize {
    n
}

/// `load_history` (what the engine asks first when nothing reads the rows) gives the messages
/// of the completed rows that are not silent, in order, or nothing; nothing for a session
/// that needs a repair (a pending row, a call of the last step without a result).
pub async fn load_history_is_what_a_model_reads_or_nothing(subject: Subject) {
    let store = subject.store;
    let rows = [
        (
            Message::user("What is the weather?"),
            MessageStatus::Completed,
            false,
        ),
        (assistant_with_calls(), MessageStatus::Completed, false),
        (
            tool_result("call_1", "weather", "sunny", false),
            MessageStatus::Completed,
            false,
        ),
        (
            tool_result("call_2", "clock", "bad json", true),
            MessageStatus::Completed,
            false,
        ),
        (
            Message::user("a note nobody reads"),
            MessageStatus::Completed,
            true,
        ),
        (Message::assistant("cut off"), MessageStatus::Failed, false),
        (
            Message::assistant("Sunny in Paris."),
            MessageStatus::Completed,
            false,
        ),
    ];
    for (message, status, silent) in rows.iter().cloned() {
        let row = NewMessage {
            message,
            status,
            request_sent_at: None,
            silent,
        };
        store.insert("clean", row).await.expect("insert");
    }
    let read: Vec<Message> = rows
        .iter()
        .filter(|(_, status, silent)| *status == MessageStatus::Completed && !silent)
        .map(|(message, ..)| message.clone())
        .collect();
    if let Some(history) = store
        .load_history("clean", &exact)
        .await
        .expect("load_history")
    {
        assert_eq!(history, read);
    }
    // Needs a repair: a call of the last step without its result, then a pending row.
    for message in [Message::user("q"), assistant_with_calls()] {
        let row = NewMessage::completed(message);
        store.insert("cut", row).await.expect("insert");
    }
    let answer = NewMessage::completed(tool_result("call_1", "weather", "sunny", false));
    store.insert("cut", answer).await.expect("insert");
    let cut = store.load_history("cut", &exact).await;
    assert_eq!(cut.expect("load_history"), None);
    let pending = NewMessage {
        status: MessageStatus::Pending,
        ..NewMessage::completed(Message::assistant(""))
    };
    store.insert("clean", pending).await.expect("insert");
    let pending_row = store.load_history("clean", &exact).await;
    assert_eq!(pending_row.expect("load_history"), None);
}

/// `rows` inserted into `session`, and a conversation on it of an agent answering with
/// `model`. The caller keeps the conversation open while it reads the store after a turn (an
/// in-memory store frees a session with its last handle).
async fn seeded(
    store: &Arc<dyn SessionStore>,
    session: &str,
    rows: impl IntoIterator<Item = NewMessage>,
    model: &ScriptedModel,
) -> Conversation {
    for row in rows {
        store.insert(session, row).await.expect("insert");
    }
    AgentBuilder::new("seeded")
        .model(model.clone())
        .store(store.clone())
        .build()
        .expect("agent")
        .session(session)
}

/// A result no call asked for never reaches the model, on every store: a store that vouches
/// for what it lends ([`SessionStore::lends_paired`]) lends no history holding one, and the
/// engine pairs the rows; any other store's history is checked and paired by the engine. A
/// store that vouches lends no such history either after a history was given back and kept.
pub async fn a_result_no_call_asked_for_never_reaches_the_model(subject: Subject) {
    let store = subject.store;
    let stray = || NewMessage::completed(tool_result("call_9", "weather", "sunny", false));
    let rows = [
        NewMessage::completed(Message::user("What is the weather?")),
        NewMessage::completed(Message::assistant("Sunny.")),
        stray(),
    ];
    let model = ScriptedModel::new([ScriptedStep::new().text("Still sunny.")]);
    let conversation = seeded(&store, "stray", rows, &model).await;
    let result = conversation.run("And now?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(
        *model.requests()[0].messages,
        [
            Message::user("What is the weather?"),
            Message::assistant("Sunny."),
            Message::user("And now?"),
        ]
    );
    if !store.lends_paired() {
        return;
    }
    let lent = store.load_history("stray", &exact).await;
    assert_eq!(lent.expect("load_history"), None);
    // Seventy messages: a store may keep only a long history (`MemoryStore` from 64).
    for i in 0..70 {
        let row = NewMessage::completed(Message::user(format!("m{i}")));
        store.insert("kept", row).await.expect("insert");
    }
    let lent = store.load_history("kept", &exact).await;
    if let Some(history) = lent.expect("load_history") {
        assert!(agent_core::is_paired(&history));
        store.keep_history("kept", history);
    }
    store.insert("kept", stray()).await.expect("insert");
    let lent = store.load_history("kept", &exact).await;
    assert_eq!(lent.expect("load_history"), None);
}

/// The messages of the completed rows of `session` that are not silent, in order.
async fn read_by_model(store: &dyn SessionStore, session: &str) -> Vec<Message> {
    let rows = store.load(session).await.expect("load");
    let read = rows
        .into_iter()
        .filter(|row| row.status == MessageStatus::Completed && !row.silent);
    read.map(|row| row.message).collect()
}

/// Whatever a turn gives back to `keep_history` (the history it borrowed with its own messages
/// after it, one with a message no row holds, one borrowed before a row of it changed),
/// `load_history` goes on giving what the rows show, or nothing.
pub async fn a_history_given_back_never_changes_what_load_history_gives(subject: Subject) {
    let store = subject.store;
    // Seventy messages: a store may keep only a long history (`MemoryStore` from 64).
    let mut first = None;
    for i in 0..70 {
        let row = NewMessage::completed(Message::user(format!("m{i}")));
        let id = store.insert("s", row).await.expect("insert").id;
        first = first.or(Some(id));
    }
    let lent = |store: &Arc<dyn SessionStore>| {
        let store = store.clone();
        async move { store.load_history("s", &exact).await.expect("load_history") }
    };
    let check = |store: &Arc<dyn SessionStore>| {
        let store = store.clone();
        async move {
            if let Some(history) = store.load_history("s", &exact).await.expect("load_history") {
                assert_eq!(history, read_by_model(&*store, "s").await);
                store.keep_history("s", history);
            }
        }
    };
    if let Some(mut history) = lent(&store).await {
        for message in [Message::user("more"), Message::assistant("answer")] {
            let row = NewMessage::completed(message.clone());
            store.insert("s", row).await.expect("insert");
            history.push(message);
        }
        store.keep_history("s", history);
    }
    check(&store).await;
    if let Some(mut history) = lent(&store).await {
        history.push(Message::user("never stored"));
        store.keep_history("s", history);
    }
    check(&store).await;
    let borrowed = lent(&store).await;
    let changed = MessageUpdate {
        message: Some(Message::user("changed")),
        ..MessageUpdate::default()
    };
    let first = first.expect("a row");
    store.update("s", first, changed).await.expect("update");
    if let Some(history) = borrowed {
        store.keep_history("s", history);
    }
    check(&store).await;
    assert_eq!(
        read_by_model(&*store, "s").await[0],
        Message::user("changed")
    );
}

/// An update sets what it names and keeps every field left `None`; a tool row's status follows
/// its message; a message of another kind clears the tool columns.
pub async fn update_changes_content_status_and_completion_time_and_keeps_the_rest(
    subject: Subject,
) {
    let store = subject.store;
    let user = store
        .insert("s", NewMessage::completed(Message::user("hi")))
        .await
        .expect("insert");
    let pending = store
        .insert(
            "s",
            NewMessage {
                message: Message::assistant(""),
                status: MessageStatus::Pending,
                request_sent_at: Some(100),
                silent: false,
            },
        )
        .await
        .expect("insert");
    store
        .update(
            "s",
            pending.id,
            MessageUpdate {
                message: Some(assistant_with_calls()),
                status: Some(MessageStatus::Completed),
                response_completed_at: Some(250),
                silent: None,
            },
        )
        .await
        .expect("update");
    let completed = StoredMessage {
        message: assistant_with_calls(),
        status: MessageStatus::Completed,
        response_completed_at: Some(250),
        ..pending.clone()
    };
    assert_eq!(
        store.load("s").await.expect("load"),
        [user.clone(), completed.clone()]
    );

    // Fields left None stay as they are.
    store
        .update(
            "s",
            pending.id,
            MessageUpdate {
                status: Some(MessageStatus::Failed),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect("status only");
    store
        .update("s", pending.id, MessageUpdate::default())
        .await
        .expect("nothing");
    store
        .update(
            "s",
            user.id,
            MessageUpdate {
                silent: Some(true),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect("silent only");
    let failed = StoredMessage {
        status: MessageStatus::Failed,
        ..completed
    };
    let silent_user = StoredMessage {
        silent: true,
        ..user
    };
    assert_eq!(
        store.load("s").await.expect("load"),
        [silent_user.clone(), failed.clone()]
    );

    // A tool row's status follows its message.
    let tool = store
        .insert(
            "s",
            NewMessage::completed(tool_result("call_1", "weather", "ok", false)),
        )
        .await
        .expect("insert tool");
    assert_eq!(tool.tool_status, Some(ToolStatus::Success));
    store
        .update(
            "s",
            tool.id,
            MessageUpdate {
                message: Some(tool_result("call_1", "weather", "boom", true)),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect("update tool");
    let errored = StoredMessage {
        message: tool_result("call_1", "weather", "boom", true),
        tool_status: Some(ToolStatus::Error),
        ..tool.clone()
    };
    assert_eq!(
        store.load("s").await.expect("load"),
        [silent_user.clone(), failed.clone(), errored]
    );
    // Replacing a tool row's message by another kind clears its tool columns.
    store
        .update(
            "s",
            tool.id,
            MessageUpdate {
                message: Some(Message::user("now a user row")),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect("update kind");
    let user_now = StoredMessage {
        message: Message::user("now a user row"),
        tool_status: None,
        ..tool
    };
    assert_eq!(
        store.load("s").await.expect("load"),
        [silent_user, failed, user_now]
    );
}

/// `has_rows` is whether the session has a row of any status, from either handle; a deleted
/// last row leaves none.
pub async fn has_rows_says_whether_a_session_has_any(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    assert!(!store.has_rows("s").await.expect("empty"));
    let row = store
        .insert(
            "s",
            NewMessage {
                status: MessageStatus::Pending,
                ..NewMessage::completed(Message::assistant(""))
            },
        )
        .await
        .expect("insert");
    assert!(store.has_rows("s").await.expect("a pending row"));
    assert!(another.has_rows("s").await.expect("from the other handle"));
    assert!(!another.has_rows("t").await.expect("another session"));
    store.delete("s", row.id).await.expect("delete");
    assert!(!another.has_rows("s").await.expect("none left"));
}

/// Updating or deleting a row that is not in the session (an unknown id, or another session's
/// row) is a `NotFound` error naming the row and the session, and changes nothing.
pub async fn a_row_not_in_the_session_is_not_found(subject: Subject) {
    let store = subject.store;
    let row = store
        .insert("s", NewMessage::completed(Message::user("hi")))
        .await
        .expect("insert");
    let missing = row.id + 100;
    let error = store
        .update("s", missing, MessageUpdate::default())
        .await
        .expect_err("unknown id");
    assert_eq!(error.kind(), StoreErrorKind::NotFound, "{error}");
    assert!(
        error
            .message()
            .contains(&format!("no message {missing} in session `s`")),
        "{error}"
    );
    let error = store
        .update(
            "other",
            row.id,
            MessageUpdate {
                status: Some(MessageStatus::Failed),
                ..MessageUpdate::default()
            },
        )
        .await
        .expect_err("another session's row");
    assert_eq!(error.kind(), StoreErrorKind::NotFound, "{error}");
    assert!(
        error
            .message()
            .contains(&format!("no message {} in session `other`", row.id)),
        "{error}"
    );
    for (session, id) in [("s", missing), ("other", row.id)] {
        let error = store.delete(session, id).await.expect_err("not there");
        assert_eq!(error.kind(), StoreErrorKind::NotFound, "{error}");
        assert!(
            error
                .message()
                .contains(&format!("no message {id} in session `{session}`")),
            "{error}"
        );
    }
    assert_eq!(store.load("s").await.expect("load"), [row]);
}

/// Deleting a row removes it alone; the next row still gets a higher id.
pub async fn delete_removes_only_its_row(subject: Subject) {
    let store = subject.store;
    let mut rows = Vec::new();
    for text in ["one", "two", "three"] {
        rows.push(
            store
                .insert("s", NewMessage::completed(Message::user(text)))
                .await
                .expect("insert"),
        );
    }
    let other = store
        .insert("t", NewMessage::completed(Message::user("elsewhere")))
        .await
        .expect("insert");
    store.delete("s", rows[1].id).await.expect("delete");
    let four = store
        .insert("s", NewMessage::completed(Message::user("four")))
        .await
        .expect("insert");
    assert!(four.id > other.id, "{four:?} after {other:?}");
    assert_eq!(
        store.load("s").await.expect("load"),
        [rows[0].clone(), rows[2].clone(), four]
    );
    assert_eq!(store.load("t").await.expect("load"), [other]);
}

/// Eight tasks insert forty rows each into two sessions at once: every row lands once, each
/// session in id order with each task's rows in its own order.
pub async fn many_concurrent_inserts_all_land(subject: Subject) {
    const TASKS: usize = 8;
    const EACH: usize = 40;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = if task % 4 < 2 {
                Arc::clone(&subject.store)
            } else {
                Arc::clone(&subject.another)
            };
            tokio::spawn(async move {
                let session = format!("session-{}", task % 2);
                for i in 0..EACH {
                    let text = format!("task {task} message {i}");
                    store
                        .insert(&session, NewMessage::completed(Message::user(text)))
                        .await
                        .expect("insert");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let mut ids = Vec::new();
    for session in ["session-0", "session-1"] {
        let rows = subject.store.load(session).await.expect("load");
        assert_eq!(rows.len(), TASKS / 2 * EACH);
        assert!(rows.windows(2).all(|p| p[0].id < p[1].id));
        for task in (0..TASKS).filter(|t| format!("session-{}", t % 2) == session) {
            let mine: Vec<String> = rows
                .iter()
                .map(|row| row.message.text().to_owned())
                .filter(|text| text.starts_with(&format!("task {task} ")))
                .collect();
            let expected: Vec<String> = (0..EACH)
                .map(|i| format!("task {task} message {i}"))
                .collect();
            assert_eq!(mine, expected);
        }
        ids.extend(rows.iter().map(|row| row.id));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), TASKS * EACH, "no row lost or doubled");
}

/// A session as a process killed mid-turn leaves it (one call answered, one not, the next model
/// call pending): the next turn marks the pending row failed, answers the open call with an
/// error, and runs on a history that pairs every call.
pub async fn the_next_turn_repairs_a_turn_cut_off_mid_way(subject: Subject) {
    let store = subject.store;
    let calls = Message::Assistant {
        content: "Checking both.".into(),
        reasoning: Default::default(),
        tool_calls: vec![
            tool_call("call_1", "weather", "{}"),
            tool_call("call_2", "clock", "{}"),
        ]
        .into(),
        reasoning_signature: None,
        provider_blocks: Vec::new(),
    };
    let cut = [
        NewMessage::completed(Message::user("Weather and time?")),
        NewMessage::completed(calls.clone()),
        NewMessage::completed(tool_result("call_1", "weather", "sunny", false)),
        NewMessage {
            message: Message::assistant("It is sun"),
            status: MessageStatus::Pending,
            request_sent_at: Some(1),
            silent: false,
        },
    ];
    let model = ScriptedModel::new([ScriptedStep::new().text("Sorry, the clock was cut off.")]);
    let conversation = seeded(&store, "cut", cut, &model).await;
    let result = conversation.run("Well?").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let interrupted = tool_result(
        "call_2",
        "clock",
        "tool `clock` did not finish: its turn was interrupted",
        true,
    );
    let rows = store.load("cut").await.expect("load");
    assert_whole(&rows);
    let summary: Vec<(Message, MessageStatus)> = rows
        .iter()
        .map(|row| (row.message.clone(), row.status))
        .collect();
    assert_eq!(
        summary,
        [
            (Message::user("Weather and time?"), MessageStatus::Completed),
            (calls.clone(), MessageStatus::Completed),
            (
                tool_result("call_1", "weather", "sunny", false),
                MessageStatus::Completed
            ),
            (Message::assistant("It is sun"), MessageStatus::Failed),
            (interrupted.clone(), MessageStatus::Completed),
            (Message::user("Well?"), MessageStatus::Completed),
            (
                Message::assistant("Sorry, the clock was cut off."),
                MessageStatus::Completed
            ),
        ]
    );
    assert_eq!(
        *model.requests()[0].messages,
        [
            Message::user("Weather and time?"),
            calls,
            tool_result("call_1", "weather", "sunny", false),
            interrupted,
            Message::user("Well?"),
        ]
    );
    drop(conversation);
}

/// `lock_turn` holds a session for one turn at a time: a second try without waiting gets
/// nothing (on this handle or another), another session is free, and a waiting try gets the
/// session once the lease is released, not before.
pub async fn one_turn_at_a_time_per_session(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    let held = store
        .lock_turn("s", false)
        .await
        .expect("lock")
        .expect("free");
    for handle in [&store, &another] {
        assert!(
            handle.lock_turn("s", false).await.expect("lock").is_none(),
            "held"
        );
    }
    let elsewhere = another
        .lock_turn("t", false)
        .await
        .expect("lock")
        .expect("another session is free");
    let waiter = tokio::spawn({
        let another = Arc::clone(&another);
        async move { another.lock_turn("s", true).await }
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the turn is held"
    );
    held.release().await;
    let next = within("the waiter takes the session", waiter)
        .await
        .expect("task")
        .expect("lock")
        .expect("taken once released");
    assert!(
        store.lock_turn("s", false).await.expect("lock").is_none(),
        "the waiter holds it now"
    );
    next.release().await;
    elsewhere.release().await;
    let again = store.lock_turn("s", false).await.expect("lock");
    assert!(again.is_some(), "free again");
}

/// A `lock_turn` future dropped while it waits leaves nothing held, nor does a lease dropped
/// without `release` (it is released in the background).
pub async fn a_dropped_lock_turn_leaves_nothing_held(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    let held = store
        .lock_turn("s", false)
        .await
        .expect("lock")
        .expect("free");
    let waiting = another.lock_turn("s", true);
    assert!(
        tokio::time::timeout(Duration::from_millis(100), waiting)
            .await
            .is_err(),
        "waits while held"
    );
    held.release().await;
    let next = within("free after the dropped wait", another.lock_turn("s", true))
        .await
        .expect("lock")
        .expect("taken");
    drop(next);
    let again = within("free after the dropped lease", store.lock_turn("s", true))
        .await
        .expect("lock");
    assert!(again.is_some());
}

/// A tool that takes `pause` (real time), long enough for two unserialized turns to interleave.
fn slow_tool(pause: Duration) -> FnTool {
    FnTool::new(
        "work",
        "Works for a while.",
        json!({"type": "object"}),
        move |_, _| async move {
            tokio::time::sleep(pause).await;
            Ok::<Value, ToolError>(json!("worked"))
        },
    )
}

/// An agent named `name` whose turn calls `work` and then answers "`name` done".
fn worker(name: &str, store: Arc<dyn SessionStore>) -> AgentBuilder {
    let model = ScriptedModel::new([
        ScriptedStep::new().tool_call("c1", "work", "{}"),
        ScriptedStep::new().text(format!("{name} done")),
    ]);
    AgentBuilder::new(name)
        .model(model)
        .store(store)
        .dyn_tool(slow_tool(Duration::from_millis(40)))
}

/// Two agents (on `first` and `second`, which share their sessions) each run a turn in session
/// `s` at the same moment: the turns run one after the other, their rows never interleave.
async fn two_agents_take_turns(first: Arc<dyn SessionStore>, second: Arc<dyn SessionStore>) {
    let a = worker("A", first.clone()).build().unwrap().session("s");
    let b = worker("B", second).build().unwrap().session("s");
    let (ra, rb) = tokio::join!(a.run("from A"), b.run("from B"));
    assert_eq!(
        (ra.status, rb.status),
        (TurnStatus::Completed, TurnStatus::Completed)
    );
    let rows = first.load("s").await.unwrap();
    assert_whole(&rows);
    let one = |name: &str| {
        vec![
            format!("from {name}"),
            String::new(),
            "worked".to_owned(),
            format!("{name} done"),
        ]
    };
    let got: Vec<String> = rows
        .iter()
        .map(|row| row.message.text().to_owned())
        .collect();
    let a_first = [one("A"), one("B")].concat();
    let b_first = [one("B"), one("A")].concat();
    assert!(got == a_first || got == b_first, "interleaved: {got:#?}");
}

/// Two agents built on one store take turns in a session.
pub async fn two_agents_on_one_store_take_turns(subject: Subject) {
    two_agents_take_turns(subject.store.clone(), subject.store).await;
}

/// Two agents on two handles of the same sessions (two stores on one file or database) take
/// turns in a session.
pub async fn two_agents_on_two_handles_take_turns(subject: Subject) {
    two_agents_take_turns(subject.store, subject.another).await;
}

/// A waiting call of assistant row `row`: call `id` of `tool` with `arguments`, of `kind`.
fn waiting(id: &str, tool: &str, arguments: Value, kind: PendingKind, row: i64) -> SuspendedCall {
    SuspendedCall {
        call: PendingCall {
            id: id.to_owned(),
            tool: tool.to_owned(),
            arguments,
            // Kept as given: a hook's modification shown to whoever approves.
            modified_arguments: (kind == PendingKind::Approval)
                .then(|| serde_json::json!({"path": "~/redacted — ünïcödé"})),
            reason: format!("tool `{tool}` waits — ünïcödé"),
            kind,
            fingerprint: format!("{:064x}", row),
            token: None,
            path: Vec::new(),
        },
        row,
        step: 2,
        agent: "files".to_owned(),
        answer: None,
        started_at: None,
        handoff: None,
        via: None,
        stop: None,
    }
}

/// A suspended session's waiting calls come back from the other handle exactly as written, in
/// call order: arguments, kind, fingerprint and token, the agent, each answer and execution
/// record. Writing them again replaces the whole list (fewer, reordered, answered); an empty
/// list clears it; sessions stay apart.
pub async fn suspended_calls_are_kept_whole_and_replaced_whole(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    assert_eq!(store.suspended("s").await.expect("read"), []);
    let mut calls = vec![
        waiting(
            "call_2",
            "delete",
            json!({"path": "a.txt", "force": true, "tags": ["x", 1, null]}),
            PendingKind::Approval,
            41,
        ),
        waiting("call_0", "pick_file", json!({}), PendingKind::Client, 41),
        waiting(
            "call_1",
            "lookup",
            json!({"q": "ü"}),
            PendingKind::Deferred,
            41,
        ),
    ];
    calls[0].call.token = Some("ab".repeat(32));
    // A call waiting inside a subagent's turn, in a step that also handed off.
    calls[1].call.path = vec!["worker".to_owned()];
    calls[1].handoff = Some("billing".to_owned());
    // A stop tool's answer given before the step suspended.
    calls[0].stop = Some("The report — ünïcödé".to_owned());
    calls[1].via = Some(SubagentTurn {
        call_id: "call_9".to_owned(),
        tool: "worker".to_owned(),
        arguments: json!({"input": "pick one"}),
        session: "worker-session-1".to_owned(),
    });
    store
        .set_suspended("s", calls.clone())
        .await
        .expect("write");
    assert_eq!(another.suspended("s").await.expect("read"), calls);
    assert_eq!(another.suspended("t").await.expect("read"), []);

    // Answers and an execution record, as the engine writes them before it runs the calls.
    calls[0].answer = Some(CallAnswer::ApproveWith {
        arguments: json!({"path": "b.txt"}),
    });
    calls[0].started_at = Some(1_700_000_000_000_001);
    calls[1].answer = Some(CallAnswer::Result {
        output: json!({"file": "notes.md"}),
        is_error: false,
    });
    calls[2].answer = Some(CallAnswer::Deny {
        reason: "not now".to_owned(),
    });
    another
        .set_suspended("s", calls.clone())
        .await
        .expect("answers");
    assert_eq!(store.suspended("s").await.expect("read"), calls);

    // Fewer calls, in another order, with other answers: the old list is gone.
    let fewer = vec![
        SuspendedCall {
            answer: Some(CallAnswer::ApproveAlways),
            ..calls[2].clone()
        },
        SuspendedCall {
            answer: Some(CallAnswer::Approve),
            ..calls[0].clone()
        },
    ];
    store
        .set_suspended("s", fewer.clone())
        .await
        .expect("fewer");
    store
        .set_suspended("t", vec![calls[1].clone()])
        .await
        .expect("another session");
    assert_eq!(another.suspended("s").await.expect("read"), fewer);
    assert_eq!(
        another.suspended("t").await.expect("read"),
        [calls[1].clone()]
    );

    store.set_suspended("s", Vec::new()).await.expect("clear");
    assert_eq!(another.suspended("s").await.expect("read"), []);
    assert_eq!(
        another.suspended("t").await.expect("read"),
        [calls[1].clone()],
        "clearing a session leaves the others"
    );
}

/// Tools approved for good come back from the other handle, by name; writing them again
/// replaces the list (a name given twice is kept once); an empty list clears it; sessions stay
/// apart.
pub async fn standing_approvals_are_kept_and_replaced(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    assert!(store.approved_tools("s").await.expect("read").is_empty());
    store
        .set_approved_tools("s", vec!["delete".to_owned(), "wipe".to_owned()])
        .await
        .expect("write");
    store
        .set_approved_tools("t", vec!["transfer".to_owned()])
        .await
        .expect("write");
    assert_eq!(
        another.approved_tools("s").await.expect("read"),
        ["delete", "wipe"]
    );
    assert_eq!(
        another.approved_tools("t").await.expect("read"),
        ["transfer"]
    );
    assert!(another.approved_tools("u").await.expect("read").is_empty());

    another
        .set_approved_tools("s", vec!["wipe".to_owned()])
        .await
        .expect("replace");
    assert_eq!(store.approved_tools("s").await.expect("read"), ["wipe"]);
    another
        .set_approved_tools("s", Vec::new())
        .await
        .expect("clear");
    assert!(store.approved_tools("s").await.expect("read").is_empty());
    assert_eq!(store.approved_tools("t").await.expect("read"), ["transfer"]);
}

/// `delete`, whose every call waits for approval; records `delete(PATH)` in `trace` when it
/// runs.
fn delete_tool(trace: &Trace) -> FnTool {
    let trace = trace.clone();
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    });
    FnTool::new("delete", "Delete a file.", schema, move |args, _| {
        let trace = trace.clone();
        async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            trace.push(format!("delete({path})"));
            Ok::<Value, ToolError>(json!(format!("deleted {path}")))
        }
    })
    .needs_approval(|_| true)
}

/// An agent on `store` with `delete` and the scripted `steps`.
fn deleting(
    store: Arc<dyn SessionStore>,
    trace: &Trace,
    steps: impl IntoIterator<Item = ScriptedStep>,
) -> agent_core::Agent {
    AgentBuilder::new("files")
        .model(ScriptedModel::new(steps))
        .dyn_tool(delete_tool(trace))
        .store(store)
        .build()
        .expect("the agent builds")
}

/// A turn on one handle suspends on a call that needs approval; an agent on the other handle
/// (another process, for a store shared by processes) sees the waiting call, approves it (the
/// first handle sees the answer) and resumes: the call runs once, there, and nothing waits any
/// more.
pub async fn a_suspended_turn_is_answered_and_resumed_from_another_handle(subject: Subject) {
    let (store, another) = (subject.store, subject.another);
    let trace = Trace::new();
    let first = deleting(
        store.clone(),
        &trace,
        [ScriptedStep::new().tool_call("c1", "delete", r#"{"path":"a.txt"}"#)],
    )
    .session("s");
    let suspended = first.run("Delete a.txt").await;
    assert_eq!(suspended.status, TurnStatus::Suspended, "{suspended:?}");
    assert_eq!(trace.take(), Vec::<String>::new(), "nothing ran");

    let second = deleting(
        another.clone(),
        &trace,
        [ScriptedStep::new().text("Deleted.")],
    )
    .session("s");
    let waiting = second.waiting_calls().await.expect("waiting");
    let ids: Vec<&str> = waiting.iter().map(|w| w.call.id.as_str()).collect();
    assert_eq!(ids, ["c1"]);
    assert_eq!(waiting[0].call, suspended.pending[0]);
    assert_eq!(second.approve("c1").await, Ok(0));
    let kept = store.suspended("s").await.expect("read");
    assert_eq!(kept[0].answer, Some(CallAnswer::Approve));

    let resumed = second.resume().await.expect("resumes");
    assert_eq!(resumed.status, TurnStatus::Completed, "{resumed:?}");
    assert_eq!(trace.take(), ["delete(a.txt)"]);
    let rows = store.load("s").await.expect("load");
    assert_whole(&rows);
    let texts: Vec<&str> = rows.iter().map(|row| row.message.text()).collect();
    assert_eq!(texts, ["Delete a.txt", "", "deleted a.txt", "Deleted."]);
    assert_eq!(store.suspended("s").await.expect("read"), []);
    drop(first);
}
