//! What a streamed turn yields ([`TurnEvent`]).

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
    /// The turn ended.
    Finished(TurnResult),
}
