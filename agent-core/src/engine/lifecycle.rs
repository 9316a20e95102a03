//! The session hooks of a turn: on_session_start (the session's first turn, before before_run)
//! and on_session_end (after on_chat_response, however the turn ended).

use std::sync::Arc;

use super::runtime::AgentRuntime;
use super::state::{End, Turn, store_error};
use crate::hooks::{ErrorStage, RunAgent, SessionEndContext, SessionStartContext, TurnResult};
use crate::hooks::{observe, observe_every};

impl Turn<'_> {
    /// on_session_start, when the session has no rows yet, once per opening of the session
    /// (its [`Opened`](crate::session::Opened) mark): a first turn that stored nothing does
    /// not make the next one fire it again, and once settled no turn under the mark reads the
    /// rows to know. Called only when the agent has such a hook (a turn makes no future for it
    /// otherwise). A failing store, reading the rows, fails the turn at stage `persist`.
    pub(super) async fn session_start(&self) -> Result<(), End> {
        if self.opened.is_some_and(|opened| opened.started()) {
            return Ok(());
        }
        let hooks = &self.agent.hooks.on_session_start;
        let started = self
            .agent
            .store
            .has_rows(self.session_id)
            .await
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))?;
        if let Some(opened) = self.opened {
            opened.start();
        }
        if started {
            return Ok(());
        }
        let ctx = SessionStartContext {
            agent: self.frame.clone(),
            session_id: self.session_id.clone(),
            request_id: self.request_id.clone(),
        };
        observe(hooks, &ctx)
            .await
            .map_err(|error| End::Failed(error, ErrorStage::Turn))
    }
}

/// on_session_end: observers; a failure is only logged (the turn has already ended). Called
/// only when the agent has such a hook.
pub(super) async fn session_end(
    agent: &AgentRuntime,
    frame: &Arc<RunAgent>,
    session: &Arc<str>,
    result: &TurnResult,
) {
    let ctx = SessionEndContext {
        agent: frame.clone(),
        session_id: session.clone(),
        request_id: result.request_id.clone(),
        status: result.status,
        error: result.error.clone(),
    };
    let _ = observe_every(&agent.hooks.on_session_end, &ctx).await;
}
