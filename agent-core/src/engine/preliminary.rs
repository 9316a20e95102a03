//! Streaming tools, the engine's side: each call's preliminary results (reported with
//! [`tool_progress`](crate::tool_progress) or yielded by a [`ToolStream`](crate::ToolStream))
//! are counted for after_tool_call and sent to the step, which delivers them to on_chunk and
//! the stream API as [`Chunk::ToolPreliminary`] while the model reads only the final value.

use std::sync::Arc;

use crate::hooks::Chunk;
use crate::tool::{Preliminary, Report, Reported};

/// The reporter of the call at `position` in its step: sends its results to `sink`, which
/// counts them.
pub(crate) fn reporter(
    id: Arc<str>,
    name: Arc<str>,
    position: usize,
    sink: Arc<Reported>,
) -> Report {
    Report {
        id,
        name,
        position,
        sink,
    }
}

/// The chunk on_chunk and the stream API see of a preliminary result.
pub(crate) fn chunk(preliminary: Preliminary) -> Chunk {
    Chunk::ToolPreliminary {
        id: preliminary.id.to_string(),
        name: preliminary.name.to_string(),
        content: preliminary.content,
    }
}
