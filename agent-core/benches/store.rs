//! Session store costs (docs/design.md §7): the writes of one turn on the SQLite store (WAL mode, a file
//! under the system temp dir), and opening a store and loading a session of 10,000 messages.
//!
//! Run with `cargo bench -p agent-core --bench store` (`TMPDIR=/some/disk` measures another
//! disk). Every call goes through the public [`SessionStore`] API on a current-thread Tokio
//! runtime, so the hand-off to the blocking pool is part of what is timed. The database files are
//! removed when each benchmark ends.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agent_core::{
    MemoryStore, Message, MessageStatus, MessageUpdate, NewMessage, SessionStore, SqliteOptions,
    SqliteStore, SqliteSync, StoredMessage, ToolCall,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
    if let Some(dir) = LONG_SESSION.get() {
        remove(dir);
    }
}

/// Messages in the long session that (b) opens and loads.
const LONG: usize = 10_000;

/// A current-thread runtime: store calls hop to its blocking pool and back, as in the engine.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime")
}

/// Microseconds since the Unix epoch.
fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agent-store-bench-{}-{name}-{}",
        std::process::id(),
        now_micros()
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Removes a benchmark's directory.
fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// Removes its directory when dropped (at the end of a benchmark, panics included).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        metadata: None,
    }
}

/// What one turn writes: the user's message, the assistant's reply with two tool calls, and the
/// two tool results.
struct Turn {
    user: Message,
    reply: Message,
    results: [Message; 2],
}

fn turn() -> Turn {
    Turn {
        user: Message::user("What's the weather in Paris and in Rome this afternoon?"),
        reply: Message::Assistant {
            content: "Let me check both cities.".into(),
            reasoning: "Two cities; call the weather tool once for each.".into(),
            tool_calls: vec![
                call(
                    "call_1",
                    "weather",
                    r#"{"city":"Paris","when":"afternoon"}"#,
                ),
                call("call_2", "weather", r#"{"city":"Rome","when":"afternoon"}"#),
            ],
            reasoning_signature: None,
            provider_blocks: Vec::new(),
        },
        results: [
            Message::Tool {
                call_id: "call_1".into(),
                name: "weather".into(),
                content: r#"{"city":"Paris","temp_c":21,"sky":"clear","wind_kmh":9}"#.into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "weather".into(),
                content: r#"{"city":"Rome","temp_c":27,"sky":"cloudy","wind_kmh":4}"#.into(),
                is_error: false,
            },
        ],
    }
}

/// The persistence of one turn, as the engine does it: insert the user row, insert the assistant
/// row pending, update it to completed, insert the two tool rows.
async fn write_turn(store: &dyn SessionStore, session: &str, turn: Turn) {
    store
        .insert(session, NewMessage::completed(turn.user))
        .await
        .expect("insert user");
    let pending = NewMessage {
        message: Message::assistant(""),
        status: MessageStatus::Pending,
        request_sent_at: Some(now_micros()),
        silent: false,
    };
    let id = store
        .insert(session, pending)
        .await
        .expect("insert assistant")
        .id;
    let done = MessageUpdate {
        message: Some(turn.reply),
        status: Some(MessageStatus::Completed),
        response_completed_at: Some(now_micros()),
        silent: None,
    };
    store
        .update(session, id, done)
        .await
        .expect("complete assistant");
    for result in turn.results {
        store
            .insert(session, NewMessage::completed(result))
            .await
            .expect("insert tool");
    }
}

/// (a) One turn's writes on SQLite (WAL, `synchronous` FULL, the default, or NORMAL): the
/// database grows by five rows per iteration in one session, as a long conversation does.
#[divan::bench(args = ["full", "normal"], sample_count = 100, sample_size = 4)]
fn turn_writes_sqlite(bencher: Bencher, synchronous: &str) {
    let dir = TempDir(temp_dir("turn"));
    let synchronous = match synchronous {
        "normal" => SqliteSync::Normal,
        _ => SqliteSync::Full,
    };
    let options = SqliteOptions::default().synchronous(synchronous);
    let store = SqliteStore::open_with(dir.0.join("turns.db"), options).expect("open");
    let runtime = runtime();
    bencher
        .with_inputs(turn)
        .bench_local_values(|turn| runtime.block_on(write_turn(&store, "bench", turn)));
}

/// (a) The same writes on the in-memory store: the floor the SQLite numbers compare to.
#[divan::bench]
fn turn_writes_memory(bencher: Bencher) {
    let store = MemoryStore::new();
    let runtime = runtime();
    bencher
        .with_inputs(turn)
        .bench_local_values(|turn| runtime.block_on(write_turn(&store, "bench", turn)));
}

/// The file holding one session of [`LONG`] messages, written once per process (outside any
/// timed region): turns of a user question, an assistant reply with reasoning and a tool call, its
/// tool result and a final answer, with a few hundred bytes of text each.
static LONG_SESSION: OnceLock<PathBuf> = OnceLock::new();

fn long_session() -> PathBuf {
    let dir = LONG_SESSION.get_or_init(|| temp_dir("load"));
    let path = dir.join("long.db");
    if path.exists() {
        return path;
    }
    let options = SqliteOptions::default().synchronous(SqliteSync::Normal);
    let store = SqliteStore::open_with(&path, options).expect("open");
    let runtime = runtime();
    runtime.block_on(async {
        for i in 0..LONG / 4 {
            let rows = [
                Message::user(format!(
                    "Question {i}: {}",
                    "how does this work? ".repeat(5)
                )),
                Message::Assistant {
                    content: format!("Looking up item {i}. {}", "Some visible text. ".repeat(8)),
                    reasoning: "The user asks about an item; search for it first. ".repeat(3),
                    tool_calls: vec![call(
                        &format!("call_{i}"),
                        "search",
                        &format!(r#"{{"query":"item {i}","limit":5}}"#),
                    )],
                    reasoning_signature: Some("c2lnbmF0dXJl".repeat(8)),
                    provider_blocks: Vec::new(),
                },
                Message::Tool {
                    call_id: format!("call_{i}"),
                    name: "search".into(),
                    content: format!(r#"{{"hits":["{}"]}}"#, "a result line ".repeat(20)),
                    is_error: false,
                },
                Message::assistant(format!("Item {i}: {}", "the answer, in prose. ".repeat(18))),
            ];
            for message in rows {
                store
                    .insert("long", NewMessage::completed(message))
                    .await
                    .expect("insert");
            }
        }
    });
    path
}

/// (b) Opening the store (schema check included) and loading the whole session of [`LONG`]
/// messages. Closing the store and dropping the rows happen after the timed region.
#[divan::bench(sample_count = 50)]
fn open_and_load_10k(bencher: Bencher) {
    let path = long_session();
    let runtime = runtime();
    bencher
        .counter(ItemsCount::new(LONG))
        .bench_local(|| -> (SqliteStore, Vec<StoredMessage>) {
            let store = SqliteStore::open(&path).expect("open");
            let rows = runtime.block_on(store.load("long")).expect("load");
            assert_eq!(rows.len(), LONG);
            (store, rows)
        });
}

/// (b) Loading the session of [`LONG`] messages from a store already open.
#[divan::bench(sample_count = 50)]
fn load_10k(bencher: Bencher) {
    let store = SqliteStore::open(long_session()).expect("open");
    let runtime = runtime();
    bencher
        .counter(ItemsCount::new(LONG))
        .bench_local(|| runtime.block_on(store.load("long")).expect("load"));
}
