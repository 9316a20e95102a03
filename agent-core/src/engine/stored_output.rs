//! A session's last accepted typed answer, read back from its stored rows (for
//! `Conversation::last_output`, in another process as well as in the one that ran the turn).
//!
//! The rows tell an accepted answer from a failed one without a column of their own:
//! - by the final-answer tool: the call whose result is not an error (a failed call's result
//!   is one, and so is that of a second final-answer call in the same step);
//! - as text (native and prompted modes): a completed reply without tool calls that the
//!   engine's retry message does not follow and that parses into the output type. A failed
//!   answer that ends the turn (no retries left) is stored failed, and failed rows are never
//!   answers. A text that does not parse was no answer: the reply of an agent without this
//!   output type (a triage agent answering itself after an earlier turn it handed off), or an
//!   `on_stop` hook's text.
//!
//! An answer that validated in a step whose turn then ended otherwise is marked the same way
//! when the turn ends (`settle.rs`): its result made an error result, or its text row failed.

use std::any::TypeId;
use std::sync::Arc;

use super::output::{RETRY_LEAD, RETRY_TAIL, from_text, from_tool};
use super::output_spec::OutputSpec;
use super::reach::Reach;
use super::runtime::AgentRuntime;
use crate::hooks::{Output, OutputMode};
use crate::message::Message;
use crate::store::{MessageStatus, StoredMessage};

/// The last accepted answer in the rows, as the model sent it.
pub(crate) struct StoredAnswer {
    /// The final-answer call's arguments, or the reply's text.
    pub(crate) raw: String,
    /// The answer parsed into the output type, or why it does not parse (the type changed
    /// since the answer was stored).
    pub(crate) parsed: Result<Output, String>,
}

/// The output spec of type `type_id` a session's rows are read with: the entry agent's, or,
/// when its output is of another type (or it has none), that of the first agent its handoffs
/// reach with one of this type (a triage agent handing off to a desk that answers typed).
pub(crate) fn spec_of(entry: &AgentRuntime, type_id: TypeId) -> Option<Arc<OutputSpec>> {
    let of_type = |agent: &AgentRuntime| {
        let spec = agent.output.as_ref()?;
        (spec.kind.type_id == type_id).then(|| spec.clone())
    };
    of_type(entry).or_else(|| Reach::of(entry).agents().find_map(of_type))
}

impl OutputSpec {
    /// The session's last accepted answer in `rows` (oldest first, as a store loads them);
    /// `None` when there is none.
    pub(crate) fn last_accepted(&self, rows: &[StoredMessage]) -> Option<StoredAnswer> {
        let kept: Vec<&Message> = rows
            .iter()
            .filter(|row| row.status == MessageStatus::Completed && !row.silent)
            .map(|row| &row.message)
            .collect();
        let texts = self.mode != OutputMode::Tool;
        for (at, message) in kept.iter().enumerate().rev() {
            match message {
                Message::Tool {
                    call_id,
                    name,
                    is_error: false,
                    ..
                } if self.answers(name) => {
                    let Some(call) = kept[..at].iter().rev().find_map(|message| match message {
                        Message::Assistant { tool_calls, .. } => {
                            tool_calls.iter().find(|call| &call.id == call_id)
                        }
                        _ => None,
                    }) else {
                        continue;
                    };
                    return Some(StoredAnswer {
                        raw: call.arguments.to_string(),
                        parsed: from_tool(self, call, Arc::from(call.arguments.as_str())),
                    });
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } if texts && tool_calls.is_empty() && !content.is_empty() => {
                    if kept.get(at + 1).is_some_and(|next| is_retry(next)) {
                        continue;
                    }
                    let parsed = from_text(content)
                        .and_then(|text| (self.kind.parse_text)(Arc::from(text), "the answer is"));
                    if parsed.is_err() {
                        continue;
                    }
                    return Some(StoredAnswer {
                        raw: content.to_string(),
                        parsed,
                    });
                }
                _ => {}
            }
        }
        None
    }
}

/// Whether a message is the engine's retry message, which sends a text answer back.
fn is_retry(message: &Message) -> bool {
    matches!(message, Message::User { content }
        if content.starts_with(RETRY_LEAD) && content.ends_with(RETRY_TAIL))
}
