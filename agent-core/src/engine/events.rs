//! What a streamed turn yields ([`TurnEvent`]).

use std::sync::Arc;

use serde_json::Value;

use crate::hooks::{Chunk, Output, StepRecord, TurnResult};

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
    /// The typed answer read so far, while the model streams it (best effort: the JSON
    /// parsed as far as it goes, open strings, arrays and objects read as closed). Given when
    /// it changed, every chunk for a small answer and less often as it grows; a step whose
    /// answer fails starts over at the next step's. With the final-answer tool the only one
    /// offered, they are the step's first call's, or, when the model names its calls as they
    /// start, its first final-answer call's (a call of a tool not offered is not read). In a
    /// step that offers other tools beside the final-answer tool, they are the step's first
    /// final-answer call's, known by its
    /// [`ModelEvent::ToolCallStart`](crate::ModelEvent::ToolCallStart) (none for a call whose
    /// start the model does not send); with one final-answer tool per variant, the first call
    /// started under a variant's tool, given as the enum's own JSON. After the
    /// [`Chunk::Discarded`] of a reply a post_process_message hook replaced, they are the
    /// replacement's. Not given while output guardrails hold the reply back.
    PartialOutput {
        /// The step streaming the answer.
        step: usize,
        /// The answer so far, as JSON.
        value: Value,
    },
    /// A step finished.
    StepFinished(StepRecord),
    /// The step's typed answer failed (it did not parse, or a validate_output hook sent it
    /// back) and the model is sent back to fix it: after that step's `StepFinished` (whose
    /// record holds the same reason in `output_failure`), before the next step's events. Not
    /// given for the failure that ends the turn (no retries left): `Finished` carries it.
    OutputRetry {
        /// The step whose answer failed.
        step: usize,
        /// Which retry this is: 1 for the first answer sent back in the turn.
        attempt: usize,
        /// Why the answer failed, as the model reads it.
        reason: String,
    },
    /// The typed answer passed parsing and the validators: the turn's output (after the
    /// step's `StepFinished`).
    Output {
        /// The step that gave it.
        step: usize,
        /// The answer.
        output: Output,
    },
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
