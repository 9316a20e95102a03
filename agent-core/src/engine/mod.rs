//! The engine: one turn from its input to on_chat_response. Every hook fires in this module
//! tree, in the order of the README's hook table (see [`crate::hooks`] for the index of which
//! function fires each event):
//!
//! - `turn`: the turn's frame (lock, before_run, history, before_turn, the step loop, on_stop,
//!   after_run, the error hooks, on_chat_response);
//! - `step`: one step (before_step, the model call, tool calls, on_step_finish), split into
//!   `model_call` (reading the stream) and `tools` (each call with its hooks);
//! - `persist`, `history`, `compact`, `lifecycle`, `classify`: message hooks around every write,
//!   history filters, session compaction, session start and end, error classification;
//! - `runtime`: what a built agent holds at run time; `request` and `events`: a turn's input
//!   and what a streamed turn yields.
//!
//! The engine depends on the hooks, the session configuration and the leaves (message, model,
//! tool, store, cancel), never on the facade (`agent`).

mod classify;
mod compact;
mod events;
mod history;
mod lifecycle;
mod model_call;
mod model_stream;
pub(crate) mod persist;
mod plan;
mod request;
pub(crate) mod runtime;
mod state;
mod step;
mod tool_call;
mod tool_calls;
mod tool_results;
mod turn;

pub use classify::{default_classifier, is_context_overflow};
pub use events::TurnEvent;
pub use request::{TurnOverlap, TurnRequest};
pub(crate) use turn::{SessionRef, run_turn};
