//! What history the target of a handoff sees on its first step ([`HandoffHistory`]).

use std::fmt;
use std::sync::Arc;

use crate::message::Message;

/// What history the target of a handoff sees on its first step (the session stores everything
/// either way).
#[derive(Clone, Default)]
pub enum HandoffHistory {
    /// Everything so far, the transfer call (with its arguments: the handoff's input, when it
    /// takes one) and its result included (the default).
    #[default]
    All,
    /// No earlier history: only this turn's input (the last user message).
    Input,
    /// The last `n` messages (fewer when the cut would separate a result from its call),
    /// after the latest user message when none of them is one: the target always sees what it
    /// is asked (and a provider refuses a request with no message).
    Last(usize),
    /// What this function returns from everything so far. Calls left without a result (or
    /// results without a call) are dropped from what it returns.
    Custom(HistoryFilter),
}

/// A function choosing, from everything so far, the messages a handoff's target sees.
pub type HistoryFilter = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

impl fmt::Debug for HandoffHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandoffHistory::All => f.write_str("All"),
            HandoffHistory::Input => f.write_str("Input"),
            HandoffHistory::Last(n) => write!(f, "Last({n})"),
            HandoffHistory::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl HandoffHistory {
    /// The messages the target sees, from everything so far.
    pub(crate) fn apply(&self, messages: &[Message]) -> Vec<Message> {
        let kept = match self {
            HandoffHistory::All => return messages.to_vec(),
            HandoffHistory::Input => messages
                .iter()
                .rev()
                .find(|message| matches!(message, Message::User { .. }))
                .cloned()
                .into_iter()
                .collect(),
            HandoffHistory::Last(n) => {
                let mut start = messages.len().saturating_sub(*n);
                // A result whose call was cut off would be invalid first in a history.
                while messages
                    .get(start)
                    .is_some_and(|message| matches!(message, Message::Tool { .. }))
                {
                    start += 1;
                }
                let is_user = |message: &Message| matches!(message, Message::User { .. });
                let asked = match messages[start..].iter().any(is_user) {
                    true => None,
                    false => messages[..start].iter().rev().find(|m| is_user(m)),
                };
                asked
                    .into_iter()
                    .chain(&messages[start..])
                    .cloned()
                    .collect()
            }
            HandoffHistory::Custom(filter) => filter(messages),
        };
        crate::message::paired(kept)
    }
}
