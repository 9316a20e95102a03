//! A worker process of the load and fault test (`tests/tests/integration/load.rs`): it serves
//! sessions `load-0` .. `load-{SESSIONS-1}` of a database at once, running TURNS turns in each,
//! while other workers do the same on the same sessions (the store's lease serializes them).
//!
//! Usage: `serve_sessions DB WORKER SESSIONS TURNS [--lease-ms MS] [--tool-ms MS]
//! [--hang-after N]`, where DB is a `postgres://` URL or a SQLite file's path. Turn `i` of
//! worker `w` sends `w{w} t{i}`; the scripted model calls the tool `work` (which sleeps
//! `--tool-ms`, default 1, and answers `worked w{w} t{i}`), then answers `done w{w} t{i}`. Each
//! session's turns run one after the other; the sessions run concurrently. It prints `done
//! SESSION TURN MICROS` once a turn completed (MICROS: from the call to its result, waiting for
//! the session included), and exits 0 once every turn completed, 1 on any other ending. With
//! `--hang-after N`, the first tool call to start once N turns completed (in a session's second
//! turn or later) prints `READY` and never returns (the test kills the process there); the
//! other turns go on.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::{AgentBuilder, FnTool, ScriptedModel, ScriptedStep, SessionStore, TurnStatus};
use serde_json::{Value, json};

/// What to run.
struct Plan {
    worker: usize,
    sessions: usize,
    turns: usize,
    tool: Duration,
    hang_after: Option<usize>,
}

/// Turns completed by this process, for `--hang-after`.
static DONE: AtomicUsize = AtomicUsize::new(0);
/// Whether a tool call hangs already.
static HUNG: AtomicBool = AtomicBool::new(false);

fn usage(why: &str) -> ! {
    eprintln!(
        "{why}\nusage: serve_sessions DB WORKER SESSIONS TURNS [--lease-ms MS] [--tool-ms MS] \
         [--hang-after N]"
    );
    std::process::exit(2);
}

fn number(name: &str, value: Option<String>) -> usize {
    match value.map(|value| value.parse()) {
        Some(Ok(n)) => n,
        _ => usage(&format!("{name} must be a number")),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(db) = args.next() else {
        usage("no DB")
    };
    let mut plan = Plan {
        worker: number("WORKER", args.next()),
        sessions: number("SESSIONS", args.next()),
        turns: number("TURNS", args.next()),
        tool: Duration::from_millis(1),
        hang_after: None,
    };
    let mut lease = None;
    while let Some(flag) = args.next() {
        let value = number(&flag, args.next());
        match flag.as_str() {
            "--lease-ms" => lease = Some(Duration::from_millis(value as u64)),
            "--tool-ms" => plan.tool = Duration::from_millis(value as u64),
            "--hang-after" => plan.hang_after = Some(value),
            _ => usage(&format!("unknown option {flag}")),
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| usage(&format!("no runtime: {error}")));
    let served = runtime.block_on(async {
        let store = tests::open_store(&db, lease)
            .await
            .map_err(|error| error.to_string())?;
        serve(store, Arc::new(plan)).await
    });
    if let Err(why) = served {
        eprintln!("{why}");
        std::process::exit(1);
    }
}

/// Runs every session's turns, the sessions concurrently.
async fn serve(store: Arc<dyn SessionStore>, plan: Arc<Plan>) -> Result<(), String> {
    let tasks: Vec<_> = (0..plan.sessions)
        .map(|session| tokio::spawn(serve_session(store.clone(), plan.clone(), session)))
        .collect();
    for task in tasks {
        task.await.map_err(|error| error.to_string())??;
    }
    Ok(())
}

/// Runs the turns of one session, one after the other, each on an agent built for it (as a
/// server building its agent per request does).
async fn serve_session(
    store: Arc<dyn SessionStore>,
    plan: Arc<Plan>,
    session: usize,
) -> Result<(), String> {
    for turn in 0..plan.turns {
        let name = format!("w{} t{turn}", plan.worker);
        let model = ScriptedModel::new([
            ScriptedStep::new().tool_call(
                format!("c{turn}"),
                "work",
                json!({ "turn": name }).to_string(),
            ),
            ScriptedStep::new().text(format!("done {name}")),
        ]);
        let agent = AgentBuilder::new("worker")
            .model(model)
            .store(store.clone())
            .dyn_tool(work(&plan, turn))
            .build()
            .map_err(|error| error.to_string())?;
        let started = Instant::now();
        let result = agent.session(format!("load-{session}")).run(name).await;
        let micros = started.elapsed().as_micros();
        if result.status != TurnStatus::Completed {
            return Err(format!("turn {turn} of session {session}: {result:?}"));
        }
        DONE.fetch_add(1, Ordering::SeqCst);
        say(&format!("done {session} {turn} {micros}"));
    }
    Ok(())
}

/// Prints one line and flushes it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The tool `work` of turn `turn` of a session: sleeps, then answers `worked TURN`. It hangs
/// instead when `--hang-after` turns completed and it is not the session's first turn (so a
/// turn of this worker went before it in the session).
fn work(plan: &Plan, turn: usize) -> FnTool {
    let pause = plan.tool;
    let hang_after = plan.hang_after.filter(|_| turn > 0);
    FnTool::new(
        "work",
        "Works for a moment.",
        json!({"type": "object", "properties": {"turn": {"type": "string"}}}),
        move |args: Value, _| async move {
            let hang = hang_after.is_some_and(|after| DONE.load(Ordering::SeqCst) >= after)
                && !HUNG.swap(true, Ordering::SeqCst);
            if hang {
                say("READY");
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            tokio::time::sleep(pause).await;
            let turn = args["turn"].as_str().unwrap_or_default().to_owned();
            Ok::<Value, agent_core::ToolError>(json!(format!("worked {turn}")))
        },
    )
}
