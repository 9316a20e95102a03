//! One turn per invocation on a persistent session in SQLite or PostgreSQL: run it twice and
//! the history grows. Offline by default (a small local model that answers from the history it
//! is sent); `--provider openai|anthropic` talks to a real model configured from the
//! environment. `--db` takes a SQLite file's path or a `postgres://` URL; without it, the URL
//! in `DATABASE_URL`.
//!
//! ```sh
//! cargo run -p examples --example chat -- --db /tmp/chat.db "Hello, I'm Ada."
//! cargo run -p examples --example chat -- --db /tmp/chat.db "What did I say before?"
//! cargo run -p examples --example chat -- --db postgres://me:secret@localhost/chat "Hello."
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{
    AgentBuilder, FinishReason, Message, Model, ModelEvent, ModelRequest, ModelStream,
    SessionStore, SqliteStore, StoreError, Usage,
};
use agent_postgres::PostgresStore;
use agent_providers::{Anthropic, OpenAi};

const USAGE: &str = "usage: chat [--db PATH|postgres://URL] [--session NAME] \
     [--provider openai|anthropic] \"message\" (--db defaults to $DATABASE_URL)";

/// An offline model that answers from the conversation it receives, so the growing history
/// shows in its reply.
struct Recollection;

impl Model for Recollection {
    fn id(&self) -> &str {
        "recollection"
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        let users: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let reply = match users.split_last() {
            Some((latest, [])) => format!("Nice to meet you. You said: \"{latest}\"."),
            Some((latest, earlier)) => format!(
                "You said: \"{latest}\". Before that you told me {} thing(s), first: \"{}\".",
                earlier.len(),
                earlier[0]
            ),
            None => "Say something.".to_owned(),
        };
        let events = vec![
            Ok(ModelEvent::TextDelta(reply.into())),
            Ok(ModelEvent::Usage(Usage {
                input_tokens: request.messages.len() as u64,
                ..Usage::default()
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ];
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

struct Args {
    db: String,
    session: String,
    provider: Option<String>,
    message: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut session, mut provider, mut words) =
        (None, "default".to_owned(), None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = Some(args.next().ok_or("--db needs a path or a URL")?),
            "--session" => session = args.next().ok_or("--session needs a name")?,
            "--provider" => provider = Some(args.next().ok_or("--provider needs a value")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other if other.starts_with('-') => return Err(format!("unknown option `{other}`")),
            other => words.push(other.to_owned()),
        }
    }
    let db = db
        .or_else(|| std::env::var("DATABASE_URL").ok())
        .ok_or("--db (or DATABASE_URL) is required")?;
    if words.is_empty() {
        return Err("a message is required".to_owned());
    }
    Ok(Args {
        db,
        session,
        provider,
        message: words.join(" "),
    })
}

fn model(provider: Option<&str>) -> Result<Arc<dyn Model>, String> {
    match provider {
        None => Ok(Arc::new(Recollection)),
        Some("openai") => Ok(Arc::new(OpenAi::from_env().map_err(|e| e.to_string())?)),
        Some("anthropic") => Ok(Arc::new(Anthropic::from_env().map_err(|e| e.to_string())?)),
        Some(other) => Err(format!(
            "unknown provider `{other}`: use openai or anthropic"
        )),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("chat: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let model = match model(args.provider.as_deref()) {
        Ok(model) => model,
        Err(problem) => {
            eprintln!("chat: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (store, place) = match open(&args.db).await {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("chat: {error}");
            return ExitCode::FAILURE;
        }
    };
    let agent = match AgentBuilder::new("chat")
        .model_arc(model)
        .store(store)
        .build()
    {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("chat: {error}");
            return ExitCode::FAILURE;
        }
    };
    let session = agent.session(&args.session);
    let result = session.run(args.message.as_str()).await;
    if let Some(error) = &result.error {
        eprintln!("chat: the turn ended {}: {error}", result.status);
        return ExitCode::FAILURE;
    }
    println!("{}", result.text);
    match session.rows().await {
        Ok(rows) => {
            println!(
                "(session `{}` in {} now holds {} messages)",
                args.session,
                place,
                rows.len()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("chat: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The store at `db` (a `postgres://` URL or a SQLite path), and how to name it in the output
/// (a URL without its password).
async fn open(db: &str) -> Result<(Arc<dyn SessionStore>, String), StoreError> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        let store = PostgresStore::connect(db).await?;
        let place = store.server();
        return Ok((Arc::new(store), place));
    }
    Ok((Arc::new(SqliteStore::open(db)?), db.to_owned()))
}
