//! The turn's side of sessions: opening the session (its system prompt), compaction before a
//! step, and the compact-and-retry recovery from a context overflow.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::classify::classify;
use super::plan::TurnPlan;
use super::state::{End, Turn, store_error};
use crate::hooks::{ChatErrorClassification, ErrorStage};
use crate::message::Message;
use crate::session::{self, Compaction, Configure, OpenSession, SessionInfo};
use crate::store::MessageUpdate;
use crate::text::Text;

impl<'a> Turn<'a> {
    /// The system prompt of an agent that configures its sessions (`configure`): the
    /// session's, built when it opens. An agent that does not uses its instructions, with no
    /// future for it (`Turn::begin`).
    pub(super) async fn session_prompt(
        &mut self,
        configure: &Configure,
    ) -> Result<Option<String>, End> {
        let agent = self.agent;
        let open = match self.opened.and_then(|opened| opened.state()) {
            Some(open) => open.clone(),
            None => {
                let info = SessionInfo {
                    agent: agent.name.to_string(),
                    session: self.session_id.to_string(),
                };
                // A cancel stops a slow context provider at once (it writes nothing itself).
                let open = session::open(configure, agent.instructions.as_deref(), info);
                let open = (self.cancel.unless(open).await)
                    .ok_or(End::Aborted)?
                    .map(Arc::new)
                    .map_err(|error| End::Failed(error, ErrorStage::Turn))?;
                // Every handle of an agent that configures its sessions carries a mark
                // (`Conversation::new`); without one the configuration serves this turn alone.
                match self.opened {
                    Some(opened) => opened.keep(open),
                    None => open,
                }
            }
        };
        let system = open.system.clone();
        self.session.open = Some(open);
        Ok(system)
    }

    /// Before a step: compacts when the history passed the token threshold or the last model
    /// call's input passed `max_input_tokens * headroom` (before a turn's first step with no
    /// call reported since the session opened or compacted, the counted history stands for
    /// that input), at most `max_compactions` times a turn.
    /// Called for an open session only (`open`): no other step makes its future.
    pub(super) async fn compact_before_step(
        &mut self,
        open: Arc<OpenSession>,
        plan: &mut TurnPlan<'_>,
    ) -> Result<(), End> {
        let config = &open.config;
        if config.summarizer.is_none() || self.session.compactions >= config.max_compactions {
            return Ok(());
        }
        let counted: usize = plan.messages.iter().map(|m| config.count(m)).sum();
        let over_threshold = config.compact_after.is_some_and(|limit| counted > limit);
        let last_input = match self.outcome.steps.last() {
            Some(step) if self.outcome.steps.len() > self.session.usage_from => {
                step.usage.input_tokens
            }
            Some(_) => 0,
            // Unknown (the session was opened in this process after its last model call, or
            // compacted since): the counter's estimate of the history stands in.
            None => match open.last_input_tokens.load(Ordering::Relaxed) {
                0 => counted as u64,
                reported => reported,
            },
        };
        let over_input = config
            .max_input_tokens
            .is_some_and(|max| last_input as f64 > max as f64 * config.headroom);
        if !over_threshold && !over_input {
            return Ok(());
        }
        self.session.compactions += 1;
        if let Compaction::Skipped(reason) = self.compact(&open, plan).await? {
            tracing::info!(session = %self.session_id, "no compaction: {reason}");
        }
        Ok(())
    }

    /// Compacts the stored history and the plan's messages with it.
    async fn compact(
        &mut self,
        open: &OpenSession,
        plan: &mut TurnPlan<'_>,
    ) -> Result<Compaction, End> {
        // A cancel stops a slow summarizer at once (the rows are written after it).
        let compaction = session::compact(&*self.agent.store, self.session_id, &open.config);
        let compaction = (self.cancel.unless(compaction).await)
            .ok_or(End::Aborted)?
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))?;
        if let Compaction::Done {
            replaced,
            summary,
            kept,
            inserts,
            hide,
        } = &compaction
        {
            // Written through the message hooks, like every other row.
            for row in inserts {
                self.insert(row.clone()).await?;
            }
            for id in hide {
                let hidden = MessageUpdate {
                    silent: Some(true),
                    ..MessageUpdate::default()
                };
                self.update(*id, hidden).await?;
            }
            let messages = std::sync::Arc::unwrap_or_clone(std::mem::take(&mut plan.messages));
            let spliced = session::splice(messages, replaced, summary.clone(), kept.clone());
            plan.set_history(std::sync::Arc::new(spliced));
            self.session.usage_from = self.outcome.steps.len();
            open.last_input_tokens.store(0, Ordering::Relaxed);
        }
        Ok(compaction)
    }

    /// The step loop, retried once from its first step after a context overflow the history
    /// could be compacted for. The plan is borrowed, not moved in: an async fn keeps a moved
    /// argument twice (800 bytes more in every turn's future).
    pub(super) async fn steps_recovering(&mut self, plan: &mut TurnPlan<'a>) -> End {
        loop {
            let end = self.steps(plan).await;
            // Only an open session recovers (by compacting): no other turn makes the future.
            let Some(open) = self.session.open.clone() else {
                return end;
            };
            // A future of its own: the steps' end (80 bytes) is not kept beside theirs while
            // they run.
            if let Err(end) = self.recover(open, plan, end).await {
                return end;
            }
        }
    }

    /// After the steps of a turn in an open session (`open`) ended: `Ok` when they ended in a
    /// context overflow the history was compacted for (the steps run again), else `Err` with
    /// how the turn ends.
    async fn recover(
        &mut self,
        open: Arc<OpenSession>,
        plan: &mut TurnPlan<'a>,
        end: End,
    ) -> Result<(), End> {
        if let Some(step) = self.outcome.steps.last() {
            open.last_input_tokens
                .store(step.usage.input_tokens, Ordering::Relaxed);
        }
        let End::Failed(error, stage) = &end else {
            return Err(end);
        };
        if !open.config.reactive || open.config.summarizer.is_none() {
            return Err(end);
        }
        let classification = classify(&self.agent.hooks, &self.frame, error, *stage).await;
        self.session.classification = Some(classification);
        if classification != ChatErrorClassification::ContextOverflow || self.session.retried {
            return Err(end);
        }
        self.session.retried = true;
        match self.compact(&open, plan).await {
            Ok(Compaction::Done { .. }) => {}
            Ok(Compaction::Skipped(reason)) => {
                tracing::warn!(session = %self.session_id, "context overflow not recovered: {reason}");
                return Err(end);
            }
            Err(_) => {
                tracing::warn!(session = %self.session_id, "context overflow not recovered: compaction failed");
                return Err(end);
            }
        }
        // The partial answer of the failed call is dropped; the turn starts over.
        if *stage == ErrorStage::Stream
            && matches!(self.outcome.added.last(), Some(Message::Assistant { tool_calls, .. }) if tool_calls.is_empty())
        {
            self.outcome.added.pop();
        }
        self.outcome.text = Text::new();
        self.session.classification = None;
        tracing::info!(session = %self.session_id, "retrying the turn after compacting its history");
        Ok(())
    }
}
