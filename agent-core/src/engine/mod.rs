//! The engine: one turn from its input to on_session_end. Every hook fires in this module
//! tree; `agent-core/docs/hooks.md` (the [`crate::event`] page) names the function that fires
//! each event.
//!
//! - `turn`: the turn's frame (lock, before_run, history, before_turn, the step loop, after_run,
//!   the error hooks, on_chat_response); `state`: what a running turn holds and how it ends;
//! - `step`: one step (before_step, the model call, tool calls, on_step_finish, on_stop), its
//!   stored reply in `reply`; `model_call` and `model_stream`: on_llm_start, reading the
//!   stream with on_chunk, on_llm_end; `plan`: the turn's model, prompt and tools once
//!   before_turn has run;
//! - `tool_calls`: a step's calls run concurrently and their results appended in the model's
//!   order; `tool_call`: one call (before_tool_call, the tool, after_tool_call);
//!   `tool_results`: after_tool_call_success / after_tool_call_failure; `tool_failures`: each
//!   tool's failures in a row against its retry limit; `resume`: the calls a suspended turn
//!   left waiting, run once answered;
//! - `handoff`: before_handoff and the switch to the target; `reach`: the agents a turn can
//!   hand off to and the steps each may run; `handoff_history`: what history a target sees;
//!   `handoff_input`: the arguments a transfer call carries;
//! - `subagent`: the tool that runs a subagent's turn (the one module above `turn`: a call to a
//!   subagent runs a whole turn); `subagent_call`: on_subagent_start / on_subagent_stop and
//!   what passes between the call and that turn;
//! - `persist`, `history`, `compact`, `lifecycle`, `classify`: message hooks around every write,
//!   history filters, session compaction, session start and end, error classification;
//! - `output_spec`: how the typed answer is asked for and read as it streams; `output`: the
//!   answer parsed, validated and sent back; `stored_output`: the last accepted one read back
//!   from a session's rows;
//! - `runtime`: what a built agent holds at run time, its handoffs included; `request` and
//!   `events`: a turn's input and what a streamed turn yields; `finish_on_drop`: a turn
//!   dropped mid-flight (a `run` timed out, a subagent's call cancelled) finished on a task of
//!   its own.
//!
//! The files import one another one way (`module_layers.rs` in the tests checks it): the
//! leaves (`runtime`, `state`, `plan` and the small ones) under the `impl Turn` files (each
//! adds the methods of one part of a turn), those under `turn`, and `subagent` on top.
//! The engine depends on the hooks, the session configuration and the leaves (message, model,
//! tool, store, cancel), never on the facade (`agent`).

mod call_hooks;
mod classify;
mod compact;
mod events;
mod finish_on_drop;
mod guardrails;
mod handoff;
mod handoff_history;
mod handoff_input;
mod history;
mod inherit;
mod lifecycle;
mod limits;
mod model_call;
mod model_stream;
mod output;
mod output_spec;
pub(crate) mod output_variants;
pub(crate) mod persist;
mod plan;
mod preliminary;
mod reach;
mod reply;
mod request;
mod resume;
mod run_context;
mod run_scope;
pub(crate) mod runtime;
mod settle;
mod state;
mod step;
pub(crate) mod stored_output;
pub(crate) mod subagent;
mod subagent_call;
mod tool_call;
mod tool_calls;
mod tool_failures;
mod tool_results;
mod traced;
mod turn;

pub use classify::{default_classifier, is_context_overflow};
pub use events::TurnEvent;
pub(crate) use finish_on_drop::FinishOnDrop;
pub use guardrails::{Guardrail, GuardrailVerdict};
pub use handoff_history::{HandoffHistory, HistoryFilter};
pub use limits::{Budget, Price, PriceTable};
pub(crate) use request::TakenLease;
pub use request::{TurnOverlap, TurnRequest};
pub use run_context::{RunContextError, run_context};
pub use run_scope::current_agent;
pub(crate) use turn::{SessionRef, run_turn};
