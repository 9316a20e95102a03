//! What a turn is asked to do: its input and options ([`TurnRequest`]) and what it does when
//! another turn of its session runs ([`TurnOverlap`]).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::limits::Budget;
use super::run_scope::RunContextValue;
use crate::cancel::CancelToken;
use crate::hooks::RunHooks;
use crate::message::Message;
use crate::store::TurnLease;

/// One turn's input and options.
#[derive(Clone, Debug, Default)]
pub struct TurnRequest {
    /// The user's input (empty: no new user message, as in a continuation).
    pub input: String,
    /// Messages stored at the start of the turn, before the input (tool results from a client,
    /// several user messages, ...).
    pub messages: Vec<Message>,
    /// Custom fields hooks can read (`TurnContext::body`).
    pub body: Map<String, Value>,
    /// Whether this turn continues an earlier one.
    pub continuation: bool,
    /// Cancel this token to abort the turn; it then ends as `aborted`.
    pub cancel: CancelToken,
    /// Observers of this turn across every agent it reaches (set with
    /// [`run_hooks`](Self::run_hooks)).
    pub(crate) run_hooks: RunHooksList,
    /// The run context (set with [`context`](Self::context)).
    pub(crate) context: Option<RunContextValue>,
    /// The most model calls of the run (set with [`max_turns`](Self::max_turns)).
    pub(crate) max_turns: Option<usize>,
    /// The run's budget (set with [`budget`](Self::budget)).
    pub(crate) budget: Option<Budget>,
    /// The turn resumes the session's suspended turn (`Conversation::resume`).
    pub(crate) resume: bool,
    /// Overrides the agent's output retries for this turn.
    pub(crate) output_retries: Option<usize>,
    /// The session's turn, already taken by the caller (`Conversation::resume` checks the
    /// suspension under it, so two resumes cannot both pass the check).
    pub(crate) lease: TakenLease,
    /// The turn was asked for from a hook or tool of its session's own running turn, on a
    /// task of its own (`Conversation::stream`): it is refused as `Busy`, as one awaited
    /// there is, instead of waiting for that turn forever.
    pub(crate) inside_turn: bool,
}

/// A turn lock taken before the turn starts, handed to it (shared by clones of the request;
/// the first turn to start takes it).
#[derive(Clone, Default)]
pub(crate) struct TakenLease(Option<Arc<Mutex<Option<TurnLease>>>>);

impl TakenLease {
    /// `lease`, for the turn to take.
    pub(crate) fn new(lease: TurnLease) -> Self {
        TakenLease(Some(Arc::new(Mutex::new(Some(lease)))))
    }

    /// The lease, if one was handed over and no turn took it yet.
    pub(crate) fn take(&self) -> Option<TurnLease> {
        let held = self.0.as_ref()?;
        held.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl fmt::Debug for TakenLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "handed over"
        } else {
            "none"
        })
    }
}

/// A turn's run hooks.
#[derive(Clone, Default)]
pub(crate) struct RunHooksList(pub(crate) Vec<Arc<dyn RunHooks>>);

impl fmt::Debug for RunHooksList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} run hooks", self.0.len())
    }
}

impl TurnRequest {
    /// A request with this input.
    pub fn new(input: impl Into<String>) -> Self {
        TurnRequest {
            input: input.into(),
            ..TurnRequest::default()
        }
    }

    /// Uses this cancellation token.
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// Sets the custom body.
    pub fn body(mut self, body: Map<String, Value>) -> Self {
        self.body = body;
        self
    }

    /// Stores these messages at the start of the turn, before the input.
    pub fn messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages.extend(messages);
        self
    }

    /// Adds observers of this turn across every agent it reaches (see [`RunHooks`]).
    pub fn run_hooks(mut self, hooks: impl RunHooks) -> Self {
        self.run_hooks.0.push(Arc::new(hooks));
        self
    }

    /// [`run_hooks`](Self::run_hooks) for observers already shared.
    pub fn run_hooks_arc(mut self, hooks: Arc<dyn RunHooks>) -> Self {
        self.run_hooks.0.push(hooks);
        self
    }

    /// Gives the turn a context value of the application's own type (a user id, permissions,
    /// a database handle), read with [`run_context`](crate::run_context) from every hook and
    /// tool of every agent the turn reaches.
    pub fn context<T: std::any::Any + Send + Sync>(mut self, context: T) -> Self {
        self.context = Some(RunContextValue::new(context));
        self
    }

    /// Allows at most `max_turns` model calls in the whole run: this turn's, its handoff
    /// targets' and its subagents' turns'. Reaching it fires on_stop with `max_turns`; without
    /// an output from a hook the turn fails with [`TurnErrorKind::Limit`](crate::TurnErrorKind::Limit).
    pub fn max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = Some(max_turns);
        self
    }

    /// Gives the whole run (subagents' turns included) a token or cost budget, checked after
    /// every model call. Spending it fires on_stop with `max_budget`; without an output from a
    /// hook the turn fails with [`TurnErrorKind::Limit`](crate::TurnErrorKind::Limit).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Marks the turn as a continuation.
    pub fn continuation(mut self, continuation: bool) -> Self {
        self.continuation = continuation;
        self
    }

    /// How many failed typed answers this turn sends back to the model to fix, over the
    /// agent's [`output_retries`](crate::AgentBuilder::output_retries).
    pub fn output_retries(mut self, retries: usize) -> Self {
        self.output_retries = Some(retries);
        self
    }
}

impl From<&str> for TurnRequest {
    fn from(input: &str) -> Self {
        TurnRequest::new(input)
    }
}

impl From<String> for TurnRequest {
    fn from(input: String) -> Self {
        TurnRequest::new(input)
    }
}

/// What a turn does when another turn of its session is running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnOverlap {
    /// Wait for the running turn to end (the default). A turn of a process that died holds
    /// its session no longer than the store's lease (see each store's guarantee).
    #[default]
    Wait,
    /// Wait at most this long for the running turn, then end as [`Reject`](Self::Reject)
    /// does (the bound is on the wait: a free session is taken however long the store takes).
    WaitAtMost(std::time::Duration),
    /// End at once with status `error` and [`TurnErrorKind::Busy`](crate::hooks::TurnErrorKind::Busy);
    /// no hook fires, nothing is stored.
    Reject,
}
