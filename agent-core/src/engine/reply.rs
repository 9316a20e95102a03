//! A step's reply once post-processed and stored ([`Reply`]): what the step's later stages read
//! (its typed answer in `output.rs`, its tool calls in `tool_calls.rs`).

use std::sync::Arc;

use crate::message::ToolCall;
use crate::model::{FinishReason, Usage};
use crate::text::Text;

/// A step's reply once post-processed and stored.
pub(super) struct Reply {
    /// The reply's row.
    pub(super) row: i64,
    /// Where the reply sits in the turn's added messages and in the plan's messages, should a
    /// hook drop one of its calls.
    pub(super) at: (usize, usize),
    pub(super) text: Text,
    pub(super) reasoning: Text,
    pub(super) tool_calls: Arc<[ToolCall]>,
    pub(super) finish_reason: FinishReason,
    pub(super) usage: Usage,
    pub(super) provider_metadata: Vec<serde_json::Value>,
}
