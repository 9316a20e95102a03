//! Where a turn sits in its run: the agent working and its path ([`RunAgent`], readable from
//! any hook or tool with [`current_agent`]), the turn's run context ([`RunContextValue`], read
//! typed with `run_context`), and the run hooks observing the run ([`RunScope`]); all handed
//! to subagents' turns through task-locals.

use std::any::{Any, TypeId, type_name};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use crate::hooks::{RunAgent, RunHooks};
use crate::util::catch_panic;

tokio::task_local! {
    /// The calling turn's run hooks while its step's tools run: a subagent's turn joins them.
    static CALLER: Option<RunScope>;
    /// What the turn running on this task carries for the code it runs.
    static TURN: TurnScope;
}

/// What a turn carries for the hooks and tools it runs, in one task-local (each poll of a turn
/// sets and restores each of its task-locals: one instead of two, `whole_turn_agent` in
/// agent-providers/benches/stream.rs).
struct TurnScope {
    /// The agent working (updated by a handoff).
    working: RefCell<Arc<RunAgent>>,
    /// The turn's run context, its caller's for a subagent's turn.
    context: Option<RunContextValue>,
}

/// A turn's run context: a value of the application's own type (read typed with
/// [`run_context`](super::run_context())), with the name of its type.
#[derive(Clone)]
pub(crate) struct RunContextValue {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

impl fmt::Debug for RunContextValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunContext<{}>", self.type_name)
    }
}

impl RunContextValue {
    pub(crate) fn new<T: Any + Send + Sync>(value: T) -> RunContextValue {
        RunContextValue {
            value: Arc::new(value),
            type_name: type_name::<T>(),
        }
    }

    /// The context of the turn running on this task, if any (a subagent's turn takes its
    /// caller's).
    pub(crate) fn current() -> Option<RunContextValue> {
        TURN.try_with(|turn| turn.context.clone()).ok().flatten()
    }

    /// Whether the value is of the type with this id.
    pub(crate) fn is(&self, id: TypeId) -> bool {
        (*self.value).type_id() == id
    }

    pub(crate) fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The value as a `T`; the name of its type when it is not one.
    pub(crate) fn downcast<T: Any + Send + Sync>(self) -> Result<Arc<T>, &'static str> {
        let carried = self.type_name;
        self.value.downcast::<T>().map_err(|_| carried)
    }
}

/// The agent working in the turn running on this task: its name, its path from the agent asked
/// (`triage > billing` after a handoff, `writer > researcher` in a subagent's turn), its turn's
/// request id and the run id (the outermost turn's). Readable from any hook or tool of the
/// turn; `None` outside a turn (or in a task it spawned).
///
/// It is the agent running the steps: after a handoff, the target, even in the turn's frame
/// hooks (after_run, on_chat_response, ...), whose context's `agent` is the entry agent whose
/// hooks they are.
pub fn current_agent() -> Option<RunAgent> {
    TURN.try_with(|turn| RunAgent::clone(&turn.working.borrow()))
        .ok()
}

impl RunAgent {
    /// The agent of a new turn of `agent`: a run of its own, or a step deeper into the calling
    /// turn's run (a subagent's turn).
    pub(crate) fn starting(agent: &Arc<str>, request_id: &Arc<str>) -> Arc<RunAgent> {
        let caller = TURN.try_with(|turn| turn.working.borrow().clone()).ok();
        Arc::new(match caller {
            Some(caller) => RunAgent {
                name: agent.clone(),
                path: Arc::from(format!("{} > {agent}", caller.path)),
                request_id: request_id.clone(),
                run_id: caller.run_id.clone(),
            },
            None => RunAgent::new(agent.clone(), request_id.clone()),
        })
    }

    /// The agent named `to`, taking over from this one (a handoff); hooks and tools reading
    /// [`current_agent`] see it from now on.
    #[must_use = "the agent taking over is the turn's from now on"]
    pub(crate) fn hand_to(&self, to: &Arc<str>) -> Arc<RunAgent> {
        let target = Arc::new(RunAgent {
            name: to.clone(),
            path: Arc::from(format!("{} > {to}", self.path)),
            request_id: self.request_id.clone(),
            run_id: self.run_id.clone(),
        });
        let _ = TURN.try_with(|turn| *turn.working.borrow_mut() = target.clone());
        target
    }
}

/// Runs `future` (a whole turn) with `agent` readable through [`current_agent`] and `context`
/// through [`run_context`](super::run_context()).
///
/// Not an `async fn`: one keeps its `future` argument beside the scoped copy it awaits, so it
/// would be twice the size of the turn's future (11.6 KB of a turn's 24 KB before this was a
/// plain function); so are the other task-local wrappers of the engine.
pub(crate) fn running<F: Future>(
    agent: Arc<RunAgent>,
    context: Option<RunContextValue>,
    future: F,
) -> impl Future<Output = F::Output> {
    let scope = TurnScope {
        working: RefCell::new(agent),
        context,
    };
    TURN.scope(scope, future)
}

/// The run hooks observing a turn: its request's and session's, and the calling turn's when
/// it is a subagent's.
#[derive(Clone)]
pub(crate) struct RunScope {
    hooks: Arc<[Arc<dyn RunHooks>]>,
    /// The turn's agent started (on_agent_start fired): only then does it end for them
    /// (on_agent_output, on_agent_end); a turn that fails before, in before_run or an input
    /// guardrail, is not an agent's run.
    pub(crate) started: bool,
}

impl RunScope {
    /// The run hooks of a new turn with these of its own; `None` when nobody observes it.
    pub(crate) fn new(hooks: Vec<Arc<dyn RunHooks>>) -> Option<RunScope> {
        let caller = CALLER.try_with(Clone::clone).ok().flatten();
        let mut all = caller
            .map(|caller| caller.hooks.to_vec())
            .unwrap_or_default();
        all.extend(hooks);
        (!all.is_empty()).then(|| RunScope {
            hooks: all.into(),
            started: false,
        })
    }

    /// Adds observers (a session's, once it is open).
    pub(crate) fn join(scope: &mut Option<RunScope>, more: &[Arc<dyn RunHooks>]) {
        if more.is_empty() {
            return;
        }
        let (mut all, started) = scope
            .take()
            .map(|scope| (scope.hooks.to_vec(), scope.started))
            .unwrap_or_default();
        all.extend(more.iter().cloned());
        *scope = Some(RunScope {
            hooks: all.into(),
            started,
        });
    }

    /// Calls every observer about `agent`, a panicking one logged and skipped.
    pub(crate) fn fire(
        &self,
        agent: &RunAgent,
        event: &'static str,
        call: impl Fn(&dyn RunHooks, &RunAgent),
    ) {
        for hooks in self.hooks.iter() {
            if let Err(panic) = catch_panic(|| call(&**hooks, agent)) {
                tracing::warn!(run.event = event, "a run hook panicked (ignored): {panic}");
            }
        }
    }
}

/// Runs `future` (a step's tool calls) so that a subagent's turn it starts joins `scope`.
/// (A plain function, not twice the size of `future`: see [`running`].)
pub(crate) fn calling<F: Future>(
    scope: Option<RunScope>,
    future: F,
) -> impl Future<Output = F::Output> {
    CALLER.scope(scope, future)
}
