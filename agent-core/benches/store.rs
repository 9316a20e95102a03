//! Session store costs (docs/design.md §7): the writes of one turn on the SQLite store (WAL mode, a file
//! under the system temp dir), whole agent turns on SQLite, on `MemoryStore` and on a store that
//! keeps nothing, and opening a store and loading a session of 10,000 messages.
//!
//! Run with `cargo bench -p agent-core --bench store` (`TMPDIR=/some/disk` measures another
//! disk). Every call goes through the public [`SessionStore`] API on a current-thread Tokio
//! runtime, so the hand-off to the blocking pool is part of what is timed. The database files are
//! removed when each benchmark ends.
//!
//! With `STORE_TURNS=N` set, the binary instead runs N agent turns (one tool call each: two
//! steps) on a fresh SQLite file with the default durability, prints the time per turn and
//! exits; under `strace -f -c -e trace=fsync,fdatasync` that counts the syncs of N turns
//! (compare with `STORE_TURNS=0`, which only opens the file):
//!
//! ```sh
//! cargo bench -p agent-core --bench store --no-run   # prints the binary's path
//! STORE_TURNS=200 strace -f -c -e trace=fsync,fdatasync target/release/deps/store-<hash>
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use agent_core::{
    Agent, AgentBuilder, FinishReason, FnTool, MemoryStore, Message, MessageStatus, MessageUpdate,
    Model, ModelEvent, ModelRequest, ModelStream, NewMessage, SessionStore, SqliteOptions,
    SqliteStore, SqliteSync, StoredMessage, ToolCall, TurnStatus,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use no_store::NoStore;
use tokio::runtime::Runtime;

#[path = "common/no_store.rs"]
mod no_store;

fn main() {
    if let Some(turns) = std::env::var("STORE_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        sqlite_turns(turns);
        return;
    }
    divan::main();
    if let Some(dir) = LONG_SESSION.get() {
        remove(dir);
    }
}

/// Messages in the long session that (b) opens and loads.
const LONG: usize = 10_000;

/// A current-thread runtime: store calls hop to its blocking pool and back, as in the engine
/// (with timers: a SQLite turn lease renews itself on one).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
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
            ]
            .into(),
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

/// The persistence of one turn, as the engine does it: take the session's turn, insert the user
/// row, insert the assistant row pending, update it to completed, insert the two tool rows, give
/// the session back.
async fn write_turn(store: &dyn SessionStore, session: &str, turn: Turn) {
    let lease = store
        .lock_turn(session, true)
        .await
        .expect("lock")
        .expect("free");
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
    lease.release().await;
}

/// (a) One turn's writes on SQLite (WAL, `synchronous` FULL, the default, or NORMAL), its
/// lease included: the database grows by five rows per iteration in one session, as a long
/// conversation does.
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
                    content: format!("Looking up item {i}. {}", "Some visible text. ".repeat(8))
                        .into(),
                    reasoning: "The user asks about an item; search for it first. "
                        .repeat(3)
                        .into(),
                    tool_calls: vec![call(
                        &format!("call_{i}"),
                        "search",
                        &format!(r#"{{"query":"item {i}","limit":5}}"#),
                    )]
                    .into(),
                    reasoning_signature: Some("c2lnbmF0dXJl".repeat(8)),
                    provider_blocks: Vec::new(),
                },
                Message::Tool {
                    call_id: format!("call_{i}").into(),
                    name: "search".into(),
                    content: format!(r#"{{"hits":["{}"]}}"#, "a result line ".repeat(20)).into(),
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

/// A model that answers with one tool call when the conversation ends with the user's message,
/// and with a short text once it ends with the tool's result: every turn is two steps. It keeps
/// nothing (unlike `ScriptedModel`, which records every request), so one agent runs any number
/// of turns.
struct ToolThenText;

impl Model for ToolThenText {
    fn id(&self) -> &str {
        "tool-then-text"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let answered = matches!(request.messages.last(), Some(Message::Tool { .. }));
        let events = if answered {
            vec![
                Ok(ModelEvent::TextDelta("It is sunny.".into())),
                Ok(ModelEvent::Finish(FinishReason::Stop)),
            ]
        } else {
            let call = call("call_1", "weather", r#"{"city":"Paris"}"#);
            vec![
                Ok(ModelEvent::ToolCall(call)),
                Ok(ModelEvent::Finish(FinishReason::ToolCalls)),
            ]
        };
        Box::pin(async_stream::stream! {
            for event in events {
                yield event;
            }
        })
    }
}

/// An agent with the weather tool on `store`.
fn turn_agent(store: Arc<dyn SessionStore>) -> Agent {
    let weather = FnTool::new(
        "weather",
        "The weather in a city.",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        |_, _| async { Ok(serde_json::json!({"sky": "clear", "temp_c": 21})) },
    );
    AgentBuilder::new("store-bench")
        .model(ToolThenText)
        .dyn_tool(weather)
        .store(store)
        .build()
        .expect("agent builds")
}

/// Runs one turn of `agent` in `session` and checks it took its two steps.
async fn agent_turn(agent: &Agent, session: &str) {
    let result = agent
        .session(session)
        .run("What's the weather in Paris?")
        .await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    assert_eq!(result.steps.len(), 2);
}

/// `STORE_TURNS=N`: N agent turns on a fresh SQLite file (default durability), one session.
fn sqlite_turns(turns: usize) {
    let dir = TempDir(temp_dir("turns"));
    let store = SqliteStore::open(dir.0.join("turns.db")).expect("open");
    let agent = turn_agent(Arc::new(store));
    let runtime = runtime();
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..turns {
            agent_turn(&agent, "bench").await;
        }
    });
    let per_turn = started.elapsed().as_secs_f64() * 1e6 / turns.max(1) as f64;
    println!("{turns} turns (two steps each) on SQLite: {per_turn:.0} µs a turn");
}

/// (c) A whole agent turn (two steps: a tool call, then the answer) on SQLite with the default
/// durability: the turn's writes, its lease and its reads, through the engine.
#[divan::bench(sample_count = 100, sample_size = 4)]
fn agent_turn_sqlite(bencher: Bencher) {
    let dir = TempDir(temp_dir("agent"));
    let store = SqliteStore::open(dir.0.join("turns.db")).expect("open");
    let agent = turn_agent(Arc::new(store));
    let runtime = runtime();
    bencher.bench_local(|| runtime.block_on(agent_turn(&agent, "bench")));
}

/// (c) The same turn on a `MemoryStore`, each in a fresh session (freed when its turn ends).
#[divan::bench(sample_count = 2000)]
fn agent_turn_memory(bencher: Bencher) {
    let agent = turn_agent(Arc::new(MemoryStore::new()));
    let runtime = runtime();
    bencher.bench_local(|| runtime.block_on(agent.run("What's the weather in Paris?")));
}

/// (c) The same turn on [`NoStore`]: the floor `agent_turn_memory` compares to.
#[divan::bench(sample_count = 2000)]
fn agent_turn_no_store(bencher: Bencher) {
    let agent = turn_agent(Arc::new(NoStore::default()));
    let runtime = runtime();
    bencher.bench_local(|| runtime.block_on(agent.run("What's the weather in Paris?")));
}
