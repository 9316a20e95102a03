//! Streaming tools, the engine's side: each call's preliminary results (reported with
//! [`tool_progress`](crate::tool_progress) or yielded by a [`ToolStream`](crate::ToolStream))
//! are counted for after_tool_call and sent to the step, which delivers them to on_chunk and
//! the stream API as [`Chunk::ToolPreliminary`](crate::Chunk::ToolPreliminary) while the
//! model reads only the final value.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use crate::hooks::Chunk;
use crate::tool::Report;

/// The reporter of one call: counts into `count` and sends chunks to `sink`.
pub(crate) fn reporter(
    id: Arc<str>,
    name: Arc<str>,
    count: Arc<AtomicUsize>,
    sink: mpsc::UnboundedSender<Chunk>,
) -> Report {
    Arc::new(move |content| {
        count.fetch_add(1, Ordering::Relaxed);
        let chunk = Chunk::ToolPreliminary {
            id: id.to_string(),
            name: name.to_string(),
            content,
        };
        // The turn may have ended (the call was cancelled): nothing to tell then.
        let _ = sink.send(chunk);
    })
}
