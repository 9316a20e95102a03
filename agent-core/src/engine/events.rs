//! What a streamed turn yields ([`TurnEvent`]).

use std::sync::Arc;

use crate::hooks::{Chunk, StepRecord, TurnResult};

/// What the stream API yields, in order; [`TurnEvent::Finished`] is always last.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum TurnEvent {
    /// A streamed chunk (text, reasoning, tool input, tool call, tool result).
    Chunk {
        /// The step number.
        step: usize,
        /// The chunk.
        chunk: Chunk,
    },
    /// A step finished.
    StepFinished(StepRecord),
    /// After the step that made it, the turn was handed to another agent.
    Handoff {
        /// The agent that handed the turn off.
        from: Arc<str>,
        /// The agent that runs the rest of the turn.
        to: Arc<str>,
    },
    /// The turn ended.
    Finished(TurnResult),
}
