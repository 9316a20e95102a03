//! Streaming tools, the engine's side: each call's preliminary results (reported with
//! [`tool_progress`](crate::tool_progress) or yielded by a [`ToolStream`](crate::ToolStream))
//! are counted for after_tool_call and sent to the step, which delivers them to on_chunk and
//! the stream API as [`Chunk::ToolPreliminary`](crate::Chunk::ToolPreliminary) while the
//! model reads only the final value.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use tokio::sync::mpsc;

use crate::hooks::Chunk;
use crate::tool::{Preliminary, Report};

/// The reporter of one call: counts into `count` and sends its results to `sink`.
pub(crate) fn reporter(
    id: Arc<str>,
    name: Arc<str>,
    count: Arc<AtomicUsize>,
    sink: mpsc::UnboundedSender<Preliminary>,
) -> Report {
    Report {
        id,
        name,
        count,
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
