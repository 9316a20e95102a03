//! Sessions: what `configure_session` sets up once per session open (context blocks that
//! compose the system prompt, compaction settings, a token counter) and compaction itself.
//!
//! A session is open while some [`Conversation`](crate::Conversation) handle on it lives in
//! this process; its configuration and system prompt are built by the first turn that runs on it.

mod compaction;
mod config;
mod prompt;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub(crate) use compaction::{Compaction, compact, splice};
pub use compaction::{SUMMARY_HEADING, cut_point, is_boundary, summary_message};
pub use config::{
    ContextBlock, ContextProvider, SessionConfig, SessionInfo, Summarizer, TokenCounter,
    default_token_counter,
};

use crate::hooks::{TurnError, TurnErrorKind};
use crate::util::catch_panic;

/// The closure given to `configure_session`.
pub(crate) type Configure = Arc<dyn Fn(SessionConfig) -> SessionConfig + Send + Sync>;

/// An open session: its configuration and system prompt, built once.
pub(crate) struct OpenSession {
    /// The configuration.
    pub(crate) config: SessionConfig,
    /// The system prompt (instructions and context blocks).
    pub(crate) system: Option<String>,
    /// The input tokens the last model call of the session reported (0 after a compaction).
    pub(crate) last_input_tokens: AtomicU64,
}

/// What a session's configuration asks that could never work, as the agent's builder refuses
/// it for the agent's own settings: a headroom that is not a share (past `max_input_tokens *
/// headroom` a step compacts first: a NaN never would, a share of 0 or less always would), and
/// an extension that could never run (a zero timeout, chunk types that select no chunk).
fn problems(config: &SessionConfig) -> Vec<String> {
    let mut problems = Vec::new();
    if !(config.headroom > 0.0 && config.headroom <= 1.0) {
        problems.push(format!(
            "SessionConfig::headroom is {}: give the share of max_input_tokens past which a \
             step compacts, above 0 and at most 1",
            config.headroom
        ));
    }
    for extension in &config.extensions {
        problems.extend(extension.problems());
    }
    problems
}

/// Opens a session: runs `configure` and every context provider, and composes the prompt.
pub(crate) async fn open(
    configure: &Configure,
    instructions: Option<&str>,
    info: SessionInfo,
) -> Result<OpenSession, TurnError> {
    let config = catch_panic(|| configure(SessionConfig::default())).map_err(|message| {
        TurnError::new(
            TurnErrorKind::Hook {
                event: "configure_session",
                hook: "configure_session".to_owned(),
            },
            format!("configure_session panicked: {message}"),
        )
    })?;
    let problems = problems(&config);
    if !problems.is_empty() {
        return Err(TurnError::new(
            TurnErrorKind::Hook {
                event: "configure_session",
                hook: "configure_session".to_owned(),
            },
            problems.join("; "),
        ));
    }
    let system = prompt::compose(instructions, &config, &info)
        .await
        .map_err(|(block, error)| {
            TurnError::new(
                TurnErrorKind::Hook {
                    event: "configure_session",
                    hook: block.clone(),
                },
                format!("context block `{block}` failed: {error}"),
            )
        })?;
    Ok(OpenSession {
        config,
        system,
        last_input_tokens: AtomicU64::new(0),
    })
}

/// One opening of a session by an agent that configures its sessions or has on_session_start
/// hooks (`AgentRuntime::marks_sessions`): shared by every handle on the session, dropped with
/// the last one, and holding the session's configuration once its first turn built it (so a
/// session is configured again once every handle is gone), and whether its start is settled.
#[derive(Default)]
pub(crate) struct Opened {
    state: OnceLock<Arc<OpenSession>>,
    /// on_session_start fired for the session, or its rows showed it had started before: no
    /// later turn under this mark fires it, nor reads the rows to know.
    started: AtomicBool,
}

impl Opened {
    /// Whether the session's start is settled (see `started`).
    pub(crate) fn started(&self) -> bool {
        self.started.load(Ordering::Relaxed)
    }

    /// Settles the session's start.
    pub(crate) fn start(&self) {
        self.started.store(true, Ordering::Relaxed);
    }

    /// The session's configuration, if a turn built it under this mark.
    pub(crate) fn state(&self) -> Option<&Arc<OpenSession>> {
        self.state.get()
    }

    /// Keeps `state` as the session's configuration; gives the one kept (another turn's, should
    /// one have been kept first).
    pub(crate) fn keep(&self, state: Arc<OpenSession>) -> Arc<OpenSession> {
        self.state.get_or_init(|| state).clone()
    }
}
