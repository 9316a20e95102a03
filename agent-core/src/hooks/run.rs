//! The one place hooks run: a hook's body under its timeout with panics caught
//! ([`run_hook`]), the failure policy applied to what fails ([`settle`]), and the loops every
//! event uses (`each`, `chain`, `observe`, and `every` for the events after the outcome). Tool-call hooks use `span` and `settle` too.

use std::sync::Arc;

use tracing::Instrument;

use super::{
    AsyncBody, Event, FailurePolicy, Hook, HookBody, HookFailure, SyncBody, TurnError,
    TurnErrorKind, TurnWideEvent,
};
use crate::cancel::CancelToken;
use crate::util::{catch_panic, catch_unwind};

tokio::task_local! {
    /// The running turn, while its steps run: an async hook stops when it is cancelled, and a
    /// turn of its session started inside it is refused.
    static TURN: RunningTurn;
}

/// What the code a turn's steps run (its hooks and tools) knows of that turn.
pub(crate) struct RunningTurn {
    /// The turn's cancel.
    pub(crate) cancel: CancelToken,
    /// The address of the store holding its session (`PanicSafe::address`).
    pub(crate) store: usize,
    /// Its session's id.
    pub(crate) session: Arc<str>,
}

/// Runs `future` (a turn's steps) so that an async hook running inside it stops as soon as
/// the turn is cancelled, rather than when it returns. The hooks that run once the turn's
/// outcome is decided run outside it: they always run to their end.
pub(crate) fn stopped_on_cancel<F: Future>(
    turn: RunningTurn,
    future: F,
) -> impl Future<Output = F::Output> {
    TURN.scope(turn, future)
}

/// Awaits `future` unless the running turn is cancelled first (`None`); outside a turn's
/// steps (see [`stopped_on_cancel`]), to its end.
pub(crate) async fn unless_turn_cancelled<F: Future>(future: F) -> Option<F::Output> {
    match TURN.try_with(|turn| turn.cancel.clone()) {
        Ok(cancel) => cancel.unless(future).await,
        Err(_) => Some(future.await),
    }
}

/// Whether the code running now runs in the steps of a turn of `session` in the store at
/// `store` (a hook or tool of it, awaited there): a turn of that session started here would
/// wait for that turn, which waits for it, forever.
pub(crate) fn inside_turn_of(store: usize, session: &str) -> bool {
    TURN.try_with(|turn| turn.store == store && *turn.session == *session)
        .unwrap_or(false)
}

/// Runs a hook, catching panics; async hooks honour their timeout and the turn's cancel.
pub(crate) async fn run_hook<E: Event>(
    hook: &Hook<E>,
    ctx: &E::Ctx,
) -> Result<E::Out, HookFailure> {
    match &hook.body {
        HookBody::Sync(body) => run_sync::<E>(body, ctx),
        // Boxed: the timeout and cancel machinery would otherwise make every hook call's future
        // (a sync hook's on each streamed chunk, too) several times larger to move around.
        HookBody::Async(body) => Box::pin(run_async(hook, body, ctx)).await,
    }
}

/// A sync hook's body, panics caught.
pub(super) fn run_sync<E: Event>(body: &SyncBody<E>, ctx: &E::Ctx) -> Result<E::Out, HookFailure> {
    match catch_panic(|| body(ctx)) {
        Ok(result) => result.map_err(|e| HookFailure::Error(e.0)),
        Err(panic) => Err(HookFailure::Panic(panic)),
    }
}

/// A sync hook's run in its span, on the spot; `None` for an async hook, which the loops below
/// then await through [`run_hook`]. A sync hook so costs no future made, moved and polled
/// through `Instrumented` (on_chunk runs its hooks on every streamed chunk).
// Inlined into `observe_now`: its call and result cost about 25 instructions per on_chunk hook
// and chunk (`agent-providers/benches/chunks.rs`). Always: with more than one caller in a
// codegen unit, LLVM calls it instead.
#[inline(always)]
fn run_now<E: TurnWideEvent>(hook: &Hook<E>, ctx: &E::Ctx) -> Option<Result<E::Out, HookFailure>> {
    match &hook.body {
        // The span only when debug spans can be recorded at all: making and entering a
        // disabled one still cost about 30 instructions per on_chunk hook and chunk
        // (`agent-providers/benches/chunks.rs`).
        HookBody::Sync(body) if tracing::level_enabled!(tracing::Level::DEBUG) => {
            Some(span(E::NAME, &hook.name).in_scope(|| run_sync::<E>(body, ctx)))
        }
        HookBody::Sync(body) => Some(run_sync::<E>(body, ctx)),
        HookBody::Async(_) => None,
    }
}

/// A hook's run in its span: on the spot for a sync hook, awaited for an async one.
macro_rules! run_in_span {
    ($hook:expr, $ctx:expr) => {
        match run_now($hook, $ctx) {
            Some(run) => run,
            None => {
                run_hook($hook, $ctx)
                    .instrument(span(E::NAME, &$hook.name))
                    .await
            }
        }
    };
}

/// An async hook's run: under its timeout, stopped by the turn's cancel.
async fn run_async<E: Event>(
    hook: &Hook<E>,
    body: &AsyncBody<E>,
    ctx: &E::Ctx,
) -> Result<E::Out, HookFailure> {
    let future = match catch_panic(|| body(ctx)) {
        Ok(future) => catch_unwind(future),
        Err(panic) => return Err(HookFailure::Panic(panic)),
    };
    let timed = async {
        match hook.options.timeout {
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .map_err(|_| HookFailure::Timeout(limit)),
            None => Ok(future.await),
        }
    };
    let result = match unless_turn_cancelled(timed).await {
        Some(result) => result?,
        None => return Err(HookFailure::Cancelled),
    };
    match result {
        Ok(result) => result.map_err(|e| HookFailure::Error(e.0)),
        Err(panic) => Err(HookFailure::Panic(panic)),
    }
}

/// Runs `hooks` in order, handing each result to `take`. A failing fail-open hook is logged and
/// skipped; a failing fail-closed hook stops the chain with the turn error it causes.
pub(crate) async fn each<E: TurnWideEvent>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
    mut take: impl FnMut(E::Out),
) -> Result<(), TurnError> {
    for hook in hooks {
        match run_in_span!(hook, ctx) {
            Ok(out) => take(out),
            Err(failure) => settle(E::NAME, &hook.name, hook.policy(), &failure)?,
        }
    }
    Ok(())
}

/// Runs every hook in `hooks`, handing each result to `take`, even after one failed closed:
/// for the events that run once the turn's outcome is decided (after_run, classify_chat_error,
/// on_chat_error, on_chat_response, on_session_end), where skipping a hook would skip its only
/// chance to run. Returns the first fail-closed failure.
pub(crate) async fn every<E: TurnWideEvent>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
    mut take: impl FnMut(E::Out),
) -> Result<(), TurnError> {
    let mut first = Ok(());
    for hook in hooks {
        match run_in_span!(hook, ctx) {
            Ok(out) => take(out),
            Err(failure) => {
                if let Err(error) = settle(E::NAME, &hook.name, hook.policy(), &failure) {
                    first = first.and(Err(error));
                }
            }
        }
    }
    first
}

/// [`every`] for observers (they return nothing).
pub(crate) async fn observe_every<E: TurnWideEvent<Out = ()>>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
) -> Result<(), TurnError> {
    every(hooks, ctx, |()| {}).await
}

/// Runs transform hooks in order: each reads `ctx` as the previous one left it, and `apply`
/// folds a hook's output into `ctx` (returning `false` stops the chain). A failing hook leaves
/// `ctx` as it was, so the chain goes on with the last good value; only a hook whose `on_error`
/// says fail closed stops it with the turn error it causes.
pub(crate) async fn chain<E: TurnWideEvent>(
    hooks: &[Hook<E>],
    ctx: &mut E::Ctx,
    mut apply: impl FnMut(&mut E::Ctx, E::Out) -> bool,
) -> Result<(), TurnError> {
    for hook in hooks {
        match run_in_span!(hook, ctx) {
            Ok(out) => {
                if !apply(ctx, out) {
                    break;
                }
            }
            Err(failure) => settle(E::NAME, &hook.name, hook.policy(), &failure)?,
        }
    }
    Ok(())
}

/// The span a hook runs in.
pub(crate) fn span(event: &'static str, hook: &str) -> tracing::Span {
    tracing::debug_span!("hook", otel.name = event, hook.event = event, hook.name = %hook)
}

/// Applies a failed hook's policy: the failure is logged; failing closed, it becomes the turn
/// error it causes ([`TurnErrorKind::Hook`]), which the caller turns into what the event guards
/// (a failed turn, a tool call that does not run). A hook stopped by the turn's cancel stops
/// what follows it too, whatever its policy: going on would store the input, or run a tool,
/// that the cancel meant to stop (the turn then ends aborted).
pub(crate) fn settle(
    event: &'static str,
    hook: &str,
    policy: FailurePolicy,
    failure: &HookFailure,
) -> Result<(), TurnError> {
    let cancelled = matches!(failure, HookFailure::Cancelled);
    if policy == FailurePolicy::FailOpen && !cancelled {
        tracing::warn!(hook.event = event, hook.name = %hook, "hook failed (fail open): {failure}");
        return Ok(());
    }
    if !cancelled {
        tracing::warn!(hook.event = event, hook.name = %hook, "hook failed (fail closed): {failure}");
    }
    Err(TurnError::new(
        TurnErrorKind::Hook {
            event,
            hook: hook.to_owned(),
        },
        format!("{event} hook `{hook}` {failure}"),
    ))
}

/// Runs observer hooks (they return nothing).
pub(crate) async fn observe<E: TurnWideEvent<Out = ()>>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
) -> Result<(), TurnError> {
    each(hooks, ctx, |()| {}).await
}

/// [`observe`] on the spot, when every hook is sync: a chunk's sync on_chunk hooks so cost no
/// future. `None` when a hook is async (then none has run).
// Inlined into the stream reader: the call (its frame set up for the span's path) cost about
// 15 instructions per chunk (`agent-providers/benches/chunks.rs`). Always, as `run_now`.
#[inline(always)]
pub(crate) fn observe_now<E: TurnWideEvent<Out = ()>>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
) -> Option<Result<(), TurnError>> {
    if hooks
        .iter()
        .any(|hook| matches!(hook.body, HookBody::Async(_)))
    {
        return None;
    }
    for hook in hooks {
        if let Some(Err(failure)) = run_now(hook, ctx)
            && let Err(error) = settle(E::NAME, &hook.name, hook.policy(), &failure)
        {
            return Some(Err(error));
        }
    }
    Some(Ok(()))
}
