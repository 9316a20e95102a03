//! Streaming tools: a tool call may report preliminary results while it runs
//! ([`tool_progress`]); they reach on_chunk and the stream API as
//! [`Chunk::ToolPreliminary`](crate::Chunk::ToolPreliminary) while the model reads only the
//! final value, and after_tool_call learns how many there were.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::hooks::Chunk;

tokio::task_local! {
    /// The tool call whose future is being polled.
    static CALL: Reporter;
}

/// Where one call's preliminary results go.
#[derive(Clone)]
pub(crate) struct Reporter {
    id: Arc<str>,
    name: Arc<str>,
    count: Arc<AtomicUsize>,
    sink: mpsc::UnboundedSender<Chunk>,
}

impl Reporter {
    pub(crate) fn new(
        id: Arc<str>,
        name: Arc<str>,
        count: Arc<AtomicUsize>,
        sink: mpsc::UnboundedSender<Chunk>,
    ) -> Reporter {
        Reporter {
            id,
            name,
            count,
            sink,
        }
    }
}

/// Runs `future` (a tool's) so that [`tool_progress`] inside it reports through `reporter`.
pub(crate) async fn reporting<F: Future>(reporter: Reporter, future: F) -> F::Output {
    CALL.scope(reporter, future).await
}

/// Reports a preliminary result of the tool call running: on_chunk and the stream API receive
/// it (as `Chunk::ToolPreliminary`) while the tool goes on; the model reads only the tool's
/// final value. Returns `false` outside a tool call (or when the value does not serialize).
///
/// ```
/// use agent_core::{FnTool, tool_progress};
/// let index = FnTool::new("index", "Indexes the files.", serde_json::json!({"type": "object"}),
///     |_, _| async {
///         for done in [25, 50, 75] {
///             tool_progress(serde_json::json!({ "percent": done }));
///         }
///         Ok(serde_json::json!("indexed 120 files"))
///     });
/// # let _ = index;
/// ```
pub fn tool_progress(value: impl Serialize) -> bool {
    let Ok(content) = serde_json::to_value(value) else {
        return false;
    };
    CALL.try_with(|call| {
        call.count.fetch_add(1, Ordering::Relaxed);
        let chunk = Chunk::ToolPreliminary {
            id: call.id.to_string(),
            name: call.name.to_string(),
            content,
        };
        // The turn may have ended (the call was cancelled): nothing to tell then.
        let _ = call.sink.send(chunk);
    })
    .is_ok()
}
