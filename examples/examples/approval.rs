//! Human approval across processes: a turn whose tool call needs approval suspends, the
//! waiting call is kept in a SQLite file, and a second invocation approves (or denies) it and
//! resumes the turn. Offline: a small local model asks to delete the file the message names
//! and to measure the disk, in one step; deleting needs approval (and only pretends).
//!
//! ```sh
//! cargo run -p examples --example approval -- --db /tmp/approval.db "Delete old.log"
//! # pending call_1_delete delete_file {"path":"old.log"}
//! cargo run -p examples --example approval -- --db /tmp/approval.db --approve call_1_delete
//! # or: --deny call_1_delete --reason "keep it"
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{
    AgentBuilder, Conversation, FinishReason, Message, Model, ModelEvent, ModelRequest,
    ModelStream, SqliteStore, ToolCall, TurnResult, TurnStatus, Usage, tool,
};

const USAGE: &str = "usage: approval --db PATH [--session NAME] \"message\"\n       \
     approval --db PATH [--session NAME] --approve CALL_ID\n       \
     approval --db PATH [--session NAME] --deny CALL_ID --reason TEXT";

/// Deletes a file (this example only pretends). Every call waits for approval.
#[tool(needs_approval)]
fn delete_file(
    /** The file to delete. */
    path: String,
) -> String {
    format!("deleted {path}")
}

/// How full the disk is.
#[tool]
fn disk_usage() -> String {
    "the disk is 93% full".to_owned()
}

/// An offline model: to a user's message it answers with two calls (delete the file the
/// message names last, measure the disk); to tool results, with what they say.
struct Janitor;

impl Model for Janitor {
    fn id(&self) -> &str {
        "janitor"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        let mut events = Vec::new();
        match request.messages.last() {
            Some(Message::User { content }) => {
                let path = content.split_whitespace().last().unwrap_or("nothing");
                for (name, arguments) in [
                    (
                        "delete_file",
                        serde_json::json!({ "path": path }).to_string(),
                    ),
                    ("disk_usage", "{}".to_owned()),
                ] {
                    let short = name.split('_').next().unwrap_or(name);
                    let id = format!("call_{turn}_{short}");
                    events.push(Ok(ModelEvent::ToolCall(ToolCall::new(id, name, arguments))));
                }
                events.push(Ok(ModelEvent::Finish(FinishReason::ToolCalls)));
            }
            _ => {
                let results: Vec<&str> = request
                    .messages
                    .iter()
                    .rev()
                    .map_while(|m| match m {
                        Message::Tool { content, .. } => Some(content.as_str()),
                        _ => None,
                    })
                    .collect();
                let reply = format!("Done: {}.", results.join("; "));
                events.push(Ok(ModelEvent::TextDelta(reply.into())));
                events.push(Ok(ModelEvent::Finish(FinishReason::Stop)));
            }
        }
        events.push(Ok(ModelEvent::Usage(Usage::default())));
        Box::pin(ReadyStream(events.into_iter()))
    }
}

/// A stream of events that are all ready.
struct ReadyStream<I>(I);

impl<I: Iterator + Unpin> futures_core::Stream for ReadyStream<I> {
    type Item = I::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<I::Item>> {
        std::task::Poll::Ready(self.0.next())
    }
}

/// What one invocation does.
enum Action {
    Run(String),
    Approve(String),
    Deny(String, String),
}

fn parse_args() -> Result<(String, String, Action), String> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut session, mut approve, mut deny, mut reason, mut words) =
        (None, "default".to_owned(), None, None, None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = Some(args.next().ok_or("--db needs a path")?),
            "--session" => session = args.next().ok_or("--session needs a name")?,
            "--approve" => approve = Some(args.next().ok_or("--approve needs a call id")?),
            "--deny" => deny = Some(args.next().ok_or("--deny needs a call id")?),
            "--reason" => reason = Some(args.next().ok_or("--reason needs a text")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other if other.starts_with('-') => return Err(format!("unknown option `{other}`")),
            other => words.push(other.to_owned()),
        }
    }
    let db = db.ok_or("--db is required")?;
    let action = match (approve, deny, words.is_empty()) {
        (Some(id), None, true) => Action::Approve(id),
        (None, Some(id), true) => Action::Deny(id, reason.ok_or("--deny needs --reason TEXT")?),
        (None, None, false) => Action::Run(words.join(" ")),
        (None, None, true) => return Err("a message, --approve or --deny is required".into()),
        _ => return Err("give one of: a message, --approve, --deny".into()),
    };
    Ok((db, session, action))
}

/// Prints a turn's outcome: its answer, or the calls it waits on.
fn report(result: &TurnResult) -> ExitCode {
    match result.status {
        TurnStatus::Suspended => {
            for call in &result.pending {
                println!("pending {} {} {}", call.id, call.tool, call.arguments);
            }
            ExitCode::SUCCESS
        }
        TurnStatus::Completed => {
            println!("{}", result.text);
            ExitCode::SUCCESS
        }
        status => {
            let why = result.error.as_ref().map(ToString::to_string);
            eprintln!(
                "approval: the turn ended {status}: {}",
                why.unwrap_or_default()
            );
            ExitCode::FAILURE
        }
    }
}

/// Gives an answer; once no call waits, resumes the turn.
async fn answer(session: &Conversation, action: Action) -> Result<Option<TurnResult>, String> {
    let waiting = match action {
        Action::Approve(id) => session.approve(&id).await,
        Action::Deny(id, reason) => session.deny(&id, reason).await,
        Action::Run(_) => return Ok(None),
    }
    .map_err(|error| error.to_string())?;
    if waiting > 0 {
        println!("{waiting} call(s) still wait for an answer");
        return Ok(None);
    }
    session
        .resume()
        .await
        .map(Some)
        .map_err(|error| error.to_string())
}

#[tokio::main]
async fn main() -> ExitCode {
    let (db, session, action) = match parse_args() {
        Ok(parsed) => parsed,
        Err(problem) => {
            eprintln!("approval: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let store = match SqliteStore::open(&db) {
        Ok(store) => Arc::new(store),
        Err(error) => {
            eprintln!("approval: {error}");
            return ExitCode::FAILURE;
        }
    };
    let agent = AgentBuilder::new("janitor")
        .model(Janitor)
        .store(store)
        .tool(delete_file_tool::DeleteFile)
        .tool(disk_usage_tool::DiskUsage)
        .build();
    let agent = match agent {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("approval: {error}");
            return ExitCode::FAILURE;
        }
    };
    let session = agent.session(session);
    let result = match action {
        Action::Run(message) => Some(session.run(message.as_str()).await),
        answer_action => match answer(&session, answer_action).await {
            Ok(result) => result,
            Err(problem) => {
                eprintln!("approval: {problem}");
                return ExitCode::FAILURE;
            }
        },
    };
    match result {
        Some(result) => report(&result),
        None => ExitCode::SUCCESS,
    }
}
