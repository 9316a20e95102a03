//! What a step leaves open while it runs (its reply's pending row, the calls of its stored
//! reply that have no stored result yet) and the one exit path that settles it when the turn
//! ends, however it ends: the pending row stored as failed with the text it had, every open
//! call answered with an error result. The stored session is whole the moment the turn ends.

use std::sync::Arc;

use super::persist::{Strictness, WriteError};
use super::state::{AnswerRow, End, OpenCall, OpenRows, Turn, as_stored, store_error};
use crate::hooks::ErrorStage;
use crate::message::{Message, ToolCall};
use crate::store::{self, MessageStatus, MessageUpdate, NewMessage};

impl OpenRows {
    /// Whether nothing is left open: no pending reply, no call without its result, no typed
    /// answer to mark (the turn's end then makes no settling future: `whole_turn_agent` in
    /// agent-providers/benches/stream.rs).
    pub(super) fn is_settled(&self) -> bool {
        self.pending.is_none() && self.answer.is_none() && self.calls.iter().all(Option::is_none)
    }

    /// The reply's row was inserted pending.
    pub(super) fn pending(&mut self, row: i64) {
        self.pending = Some((row, Message::assistant("")));
    }

    /// What the pending reply holds, stored with the row if the turn ends now (tool calls are
    /// left out: they never ran).
    pub(super) fn partial(&mut self, message: &Message) {
        if let Some((_, held)) = &mut self.pending
            && let Message::Assistant {
                content,
                reasoning,
                reasoning_signature,
                ..
            } = message
        {
            *held = Message::Assistant {
                content: content.clone(),
                reasoning: reasoning.clone(),
                tool_calls: Arc::default(),
                reasoning_signature: reasoning_signature.clone(),
                provider_blocks: Vec::new(),
            };
        }
    }

    /// The reply's row is settled (stored completed with these calls, failed, or deleted).
    pub(super) fn reply_settled(&mut self, calls: &[ToolCall]) {
        self.pending = None;
        let open = |call: &ToolCall| {
            Some(OpenCall {
                id: call.id.clone(),
                tool: call.name.clone(),
            })
        };
        self.calls = calls.iter().map(open).collect();
    }

    /// The call at `position` has its result stored, was taken out of the reply, or waits for
    /// an answer (kept with the session).
    /// Marked where it stands, not taken out of the list (a `retain` over every open call for
    /// each result: about 120 instructions a call at 8 calls, `whole_turn_calls_agent` in
    /// agent-providers/benches/stream.rs).
    pub(super) fn answered(&mut self, position: usize) {
        if let Some(call) = self.calls.get_mut(position) {
            *call = None;
        }
    }
}

impl Turn<'_> {
    /// Settles what the step left open, so the stored session is whole when the turn ends.
    /// The writes go through the message hooks, which cannot stop them: a hook that fails
    /// here is logged (the turn's error is already decided). A store that fails here fails a
    /// turn that had completed; otherwise the turn's own end stands.
    pub(super) async fn settle(&mut self, end: End) -> End {
        let open = std::mem::take(&mut self.open);
        let mut failed = None;
        if let Some((row, message)) = open.pending {
            let update = MessageUpdate {
                message: Some(message.clone()),
                status: Some(MessageStatus::Failed),
                response_completed_at: Some(store::now_micros()),
                silent: None,
            };
            match self
                .writer()
                .update_as(row, update, Strictness::Lenient)
                .await
            {
                Ok(stored) if !message.text().is_empty() => {
                    self.outcome.added.push(as_stored(message, stored));
                }
                Ok(_) => {}
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        for call in open.calls.into_iter().flatten() {
            let result = unanswered(&call, &end);
            let row = NewMessage::completed(result.clone());
            match self.writer().insert_id(row, Strictness::Lenient).await {
                Ok(_) => self.outcome.added.push(result),
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        if let Some(answer) = open.answer.filter(|_| self.outcome.output.is_none())
            && let Err(error) = self.not_taken(answer, &end).await
        {
            failed = failed.or(Some(error));
        }
        match (failed, end) {
            (Some(WriteError::Store(error)), End::Completed(_)) => {
                End::Failed(store_error(error), ErrorStage::Persist)
            }
            (Some(_), end) => {
                tracing::error!("a turn's rows could not be settled; the next turn repairs them");
                end
            }
            (None, end) => end,
        }
    }
}

impl Turn<'_> {
    /// A typed answer that validated in a step whose turn then ended otherwise (another call's
    /// fail-closed hook, a cancel, a call waiting for approval) is not the turn's: its rows
    /// say so, as those of an answer that failed do, so it is not read back as accepted
    /// (`stored_output.rs`). A text answer is stored failed; the final-answer call's result
    /// becomes an error result saying why (the call keeps a result: the history stays valid).
    async fn not_taken(&mut self, answer: AnswerRow, end: &End) -> Result<(), WriteError> {
        let (row, update) = match answer {
            AnswerRow::Text(row) => {
                let failed = MessageUpdate {
                    message: None,
                    status: Some(MessageStatus::Failed),
                    response_completed_at: None,
                    silent: None,
                };
                (row, failed)
            }
            AnswerRow::Call(row, accepted) => {
                let Message::Tool { call_id, name, .. } = &accepted else {
                    return Ok(());
                };
                let why = match end {
                    End::Aborted => "the turn was aborted".to_owned(),
                    End::Failed(error, _) => {
                        format!("the turn ended with an error: {}", error.message)
                    }
                    End::Suspended => {
                        "the turn was suspended: other calls wait for an answer".to_owned()
                    }
                    End::Completed(_) => "the turn ended".to_owned(),
                };
                let result = Message::Tool {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: format!("The final answer was not taken: {why}.").into(),
                    is_error: true,
                };
                if let Some(added) = self.outcome.added.iter_mut().find(|m| **m == accepted) {
                    *added = result.clone();
                }
                let rewritten = MessageUpdate {
                    message: Some(result),
                    status: None,
                    response_completed_at: None,
                    silent: None,
                };
                (row, rewritten)
            }
        };
        self.writer()
            .update_as(row, update, Strictness::Lenient)
            .await
            .map(drop)
    }
}

/// The error result of a call the turn ended without answering.
fn unanswered(call: &OpenCall, end: &End) -> Message {
    let why = match end {
        End::Aborted => format!("tool `{}` did not finish: the turn was aborted", call.tool),
        End::Failed(error, _) => format!(
            "tool `{}` has no result: the turn ended with an error: {}",
            call.tool, error.message
        ),
        End::Completed(_) | End::Suspended => {
            format!("tool `{}` has no result: the turn ended", call.tool)
        }
    };
    Message::Tool {
        call_id: call.id.clone(),
        name: call.tool.clone(),
        content: why.into(),
        is_error: true,
    }
}
