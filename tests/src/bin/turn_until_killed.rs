//! A process that starts a turn on a stored session and never finishes it, for the durability,
//! lease and approval tests to kill with SIGKILL. Usage: `turn_until_killed DB
//! stream|tool|approved [LEASE_MS]`, where DB is a SQLite file's path or a `postgres://` URL.
//! It prints `READY` once the turn is at the point to be cut: streaming an answer (`stream`),
//! running a tool (`tool`), or running the approved call `wait` of the session's suspended
//! turn, which it resumes (`approved`). `LEASE_MS` sets the store's turn lease (default: the
//! store's).

use std::io::Write;
use std::time::Duration;

use agent_core::{AgentBuilder, FnTool, Hook, ScriptedModel, ScriptedStep, event};
use serde_json::json;

fn ready() {
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "READY");
    let _ = stdout.flush();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(db), Some(mode)) = (args.next(), args.next()) else {
        eprintln!("usage: turn_until_killed DB stream|tool|approved [LEASE_MS]");
        std::process::exit(2);
    };
    let lease = match args.next().map(|lease| lease.parse().map_err(|_| lease)) {
        None => None,
        Some(Ok(millis)) => Some(Duration::from_millis(millis)),
        Some(Err(lease)) => {
            eprintln!("LEASE_MS must be a number of milliseconds, not `{lease}`");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        std::process::exit(1)
    };
    let store = match runtime.block_on(tests::open_store(&db, lease)) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let hour = Duration::from_secs(3600);
    let approved = mode == "approved";
    let step = match mode.as_str() {
        "approved" => ScriptedStep::new().text("Never asked: the approved tool hangs first."),
        "stream" => ScriptedStep::new()
            .text("Partial answer")
            .sleep(hour)
            .text(" never sent"),
        _ => ScriptedStep::new()
            .text("Running the tool.")
            .tool_call("call_1", "wait", "{}"),
    };
    let wait = FnTool::new(
        "wait",
        "Waits a long time.",
        json!({"type": "object"}),
        move |_, _| async move {
            ready();
            tokio::time::sleep(hour).await;
            Ok(json!("done"))
        },
    )
    .needs_approval(move |_| approved);
    let agent = AgentBuilder::new("doomed")
        .model(ScriptedModel::new([step]))
        .store(store)
        .dyn_tool(wait)
        .hook(Hook::<event::OnChunk>::sync("ready", move |ctx| {
            if matches!(&ctx.chunk, agent_core::Chunk::TextDelta(text) if text == "Partial answer")
            {
                ready();
            }
        }))
        .build();
    let agent = match agent {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let session = agent.session("durable");
    if approved {
        let result = runtime.block_on(session.resume());
        eprintln!("the resumed turn ended, which it should not: {result:?}");
        std::process::exit(3);
    }
    let result = runtime.block_on(session.run("Please answer."));
    eprintln!("the turn ended, which it should not: {result:?}");
    std::process::exit(3);
}
