//! Sessions: what `configure_session` sets up once per session open (context blocks that
//! compose the system prompt, compaction settings, a token counter) and compaction itself.
//!
//! A session is open while some [`Conversation`](crate::Conversation) handle on it lives in
//! this process; its configuration and system prompt are built by the first turn that runs on it.

mod compaction;
mod config;
mod prompt;

use hashbrown::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, PoisonError, Weak};

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

/// One opening of a session by an agent: shared by every handle on the session, dropped with
/// the last one.
#[derive(Debug)]
pub(crate) struct Opened;

/// The open sessions of an agent. An entry lives as long as the session's [`Opened`] mark
/// (shared by every handle on the session), so a session is configured again once every handle
/// is gone.
#[derive(Default)]
pub(crate) struct SessionStates {
    inner: std::sync::Mutex<StateTable>,
}

#[derive(Default)]
struct StateTable {
    open: HashMap<Arc<str>, (Weak<Opened>, Arc<OpenSession>)>,
    /// Entries whose mark is gone are forgotten when the table grows to this size.
    prune_at: usize,
}

impl SessionStates {
    /// The open state of `session`, if it was opened under this mark.
    pub(crate) fn get(&self, session: &str, opened: &Arc<Opened>) -> Option<Arc<OpenSession>> {
        let table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (owner, state) = table.open.get(session)?;
        (owner.as_ptr() == Arc::as_ptr(opened)).then(|| state.clone())
    }

    /// Records `session` as opened under this mark.
    pub(crate) fn put(&self, session: &Arc<str>, opened: &Arc<Opened>, state: Arc<OpenSession>) {
        let mut table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if table.open.len() >= table.prune_at {
            table.open.retain(|_, (owner, _)| owner.strong_count() > 0);
            table.prune_at = (table.open.len() * 2).max(64);
        }
        table
            .open
            .insert(session.clone(), (Arc::downgrade(opened), state));
    }
}
