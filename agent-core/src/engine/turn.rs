//! A turn's frame, from the user's input to on_chat_response: the session's turn (taken from
//! the store),
//! on_session_start, before_run, the history, before_turn, the step loop (`step`), on_stop,
//! after_run, the error hooks and on_chat_response, in the order of docs/design.md §5.

use std::sync::{Arc, PoisonError};

use tokio::sync::mpsc;
use tracing::Instrument;

use super::classify;
use super::events::TurnEvent;
use super::guardrails;
use super::history;
use super::inherit::Inherited;
use super::lifecycle;
use super::limits::RunLimits;
use super::plan::TurnPlan;
use super::reach::Reach;
use super::request::{TurnOverlap, TurnRequest};
use super::resume;
use super::run_scope::{self, RunContextValue, RunScope};
use super::runtime::AgentRuntime;
use super::state::{End, Flow, Outcome, SessionTurn, Turn, as_stored, store_error};
use crate::hooks::extension::{self as extensions, ExtensionEvent};
use crate::hooks::{
    ChatErrorClassification, ChatErrorContext, ChatResponse, ErrorStage, GuardrailKind,
    OutputReport, RunAgent, RunContext, RunningTurn, TurnConfig, TurnContext, TurnError,
    TurnErrorKind, TurnHooks, TurnResult, TurnStatus, each, every, inside_turn_of, observe,
    observe_every, stopped_on_cancel,
};
use crate::message::{self, Message};
use crate::model::Usage;
use crate::session::Opened;
use crate::store::{
    self, MessageStatus, MessageUpdate, NewMessage, StoredMessage, SuspendedCall, TurnLease,
};
use crate::text::Text;
use crate::util::{boxed, catch_unwind, new_id};

/// The session a turn runs in: its id and its open mark.
pub(crate) struct SessionRef<'a> {
    /// The session id.
    pub(crate) id: &'a Arc<str>,
    /// The session's open mark, shared by every handle on it (`None` when the agent does not
    /// configure its sessions: nothing reads it).
    pub(crate) opened: Option<&'a Arc<Opened>>,
}

/// Runs one turn of `agent` in `session`; events go to `sink` when streaming.
///
/// Not an `async fn`, and neither is [`Turn::run`]: an async fn keeps each argument beside the
/// copy its body moves out of it, for as long as it runs; an `async move` block uses what it
/// captured in place. A turn waiting on its model holds this future the whole time, so each
/// byte counts once per session in flight (`cargo bench -p agent-core --bench sessions`).
/// For the same reason the request comes boxed: each future that carries it on to the turn's
/// start (the caller's, this one, [`Turn::run`], `drive`) keeps a slot for it while the turn
/// runs, 8 bytes each instead of 248 (the box is freed once the turn has started).
pub(crate) fn run_turn<'a>(
    agent: &'a AgentRuntime,
    session: SessionRef<'a>,
    request: Box<TurnRequest>,
    sink: Option<mpsc::Sender<TurnEvent>>,
) -> impl Future<Output = TurnResult> + 'a {
    let request_id: Arc<str> = new_id("req").into();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {}", agent.name),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent.name,
        gen_ai.conversation.id = %session.id,
        gen_ai.request.id = %request_id,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    let run = RunScope::new(request.run_hooks.0.clone());
    let me = RunAgent::starting(&agent.name, &request_id);
    let limits = RunLimits::new(request.max_turns, request.budget.clone());
    // The turn's context, or its caller's for a subagent's turn.
    let context = request.context.clone().or_else(RunContextValue::current);
    // The wrappers' copies: the block below takes the originals.
    let (scope_agent, scope_context, turn_span) = (me.clone(), context.clone(), span.clone());
    let turn = async move {
        let reach = Reach::of(agent);
        let turn = Turn {
            agent,
            current: agent,
            reach: &reach,
            session_id: session.id,
            opened: session.opened,
            request_id,
            continuation: request.continuation,
            cancel: request.cancel.clone(),
            sink,
            // Room for a tool call's turn: two step records (480 bytes) and three added
            // messages (the call, its result, the answer: 360 bytes); a first push would make
            // room for four of each.
            outcome: Outcome {
                steps: Vec::with_capacity(2),
                added: Vec::with_capacity(3),
                ..Outcome::default()
            },
            open: Default::default(),
            held: Default::default(),
            partials: Default::default(),
            extensions: agent.extensions.clone(),
            frame: me.clone(),
            me,
            inherited: Inherited::for_new_turn(),
            limits,
            run,
            session: SessionTurn::default(),
            span: turn_span,
        };
        turn.run(request, context).await
    }
    .instrument(span);
    run_scope::running(scope_agent, scope_context, turn)
}

/// Logs the panic of a cancelled turn's steps, which the turn's `aborted` end does not show.
#[cold]
fn cancelled_turn_panicked(error: &TurnError) {
    tracing::warn!(
        "{} (the turn was cancelled, and ends aborted)",
        error.message
    );
}

impl<'a> Turn<'a> {
    /// The whole turn: its session taken, its steps (boxed), its rows settled and its result.
    /// While the steps run, this future holds the turn's state and little else: the end of
    /// the turn (settling and the result hooks, 5 KB of future), the turn rejected before it
    /// starts (3 KB) and the taking of its session are boxed when they happen instead of being
    /// reserved in it for the whole turn (this future was 5.8 KB, of which a turn waiting on
    /// its model used 2.2 KB).
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn would keep `self` and `request` twice for the whole turn"
    )]
    fn run(
        mut self,
        request: Box<TurnRequest>,
        context: Option<RunContextValue>,
    ) -> impl Future<Output = TurnResult> + 'a {
        async move {
            if let Some(error) = self.agent.missing_context(context.as_ref()) {
                return Box::pin(self.unstarted(TurnStatus::Error, Some(error))).await;
            }
            // Boxed too (460 bytes): it waits only while another turn holds the session.
            let taken = match request.lease.take() {
                Some(lease) => Ok(lease),
                None => boxed(|| self.take_session(request.inside_turn)).await,
            };
            let lease = match taken {
                Ok(lease) => lease,
                Err((status, error)) => return Box::pin(self.unstarted(status, error)).await,
            };
            // A panic in code the turn runs outside any hook or tool still ends the turn through
            // its error hooks and on_chat_response.
            // Boxed before it is wrapped: the steps' future is large, and is moved once.
            let running = RunningTurn {
                cancel: self.cancel.clone(),
                store: self.agent.store.address(),
                session: self.session_id.clone(),
            };
            let steps = stopped_on_cancel(running, boxed(|| self.drive(request)));
            let end = match catch_unwind(Box::pin(steps)).await {
                Ok(end) => end,
                Err(message) => End::Failed(
                    TurnError::new(
                        TurnErrorKind::Panicked,
                        format!("the turn panicked: {message}"),
                    ),
                    ErrorStage::Turn,
                ),
            };
            // A cancel wins over a failure it caused (a fail-closed hook it stopped). A panic
            // is logged: no cancel makes one expected (a tool's future whose `Drop` panics as
            // the cancel stops it ends here).
            let end = match end {
                End::Failed(error, _) if self.cancel.is_cancelled() => {
                    if error.kind == TurnErrorKind::Panicked {
                        cancelled_turn_panicked(&error);
                    }
                    End::Aborted
                }
                end => end,
            };
            boxed(|| self.finish(end, lease)).await
        }
    }

    /// Takes the session's turn from the store, as the agent's [`TurnOverlap`] says; a cancel
    /// while the turn waits ends it at once.
    async fn take_session(
        &self,
        inside_turn: bool,
    ) -> Result<TurnLease, (TurnStatus, Option<TurnError>)> {
        let session = self.session_id;
        let busy = |waited: Option<std::time::Duration>| {
            let message = match waited {
                Some(waited) => format!(
                    "a turn of session `{session}` has been running for all of the {} ms this \
                     turn waited",
                    waited.as_millis()
                ),
                None => format!("a turn of session `{session}` is already running"),
            };
            (
                TurnStatus::Error,
                Some(TurnError::new(TurnErrorKind::Busy, message)),
            )
        };
        let store_failed = |error| (TurnStatus::Error, Some(store_error(error)));
        if inside_turn || inside_turn_of(self.agent.store.address(), session) {
            let message = format!(
                "a turn of session `{session}` was started inside that session's running turn \
                 (by one of its hooks or tools), which it would wait for forever: start it once \
                 that turn has ended (from on_chat_response, or on a task of its own)"
            );
            return Err((
                TurnStatus::Error,
                Some(TurnError::new(TurnErrorKind::Busy, message)),
            ));
        }
        let (wait, limit) = match self.agent.overlap {
            TurnOverlap::Wait => (true, None),
            TurnOverlap::WaitAtMost(limit) => (true, Some(limit)),
            TurnOverlap::Reject => (false, None),
        };
        let store = &self.agent.store;
        let take = async {
            match limit {
                // The bound is on the wait for another turn, not on the store: a free session
                // is taken however long the store takes to hand it over.
                Some(limit) => match store.lock_turn(session, false).await {
                    Ok(None) => tokio::time::timeout(limit, store.lock_turn(session, true))
                        .await
                        .map_err(|_| busy(Some(limit))),
                    taken => Ok(taken),
                },
                None => Ok(store.lock_turn(session, wait).await),
            }
        };
        if self.cancel.is_cancelled() {
            return Err((TurnStatus::Aborted, None));
        }
        // The store first: a free session is taken without waiting on the token at all.
        let Some(taken) = self.cancel.unless(take).await else {
            return Err((TurnStatus::Aborted, None));
        };
        let taken = taken?;
        match taken {
            Ok(Some(lease)) => Ok(lease),
            Ok(None) => Err(busy(None)),
            Err(error) => Err(store_failed(error)),
        }
    }

    /// The result of a turn that ended before it took its session: rejected because another
    /// turn of its session is running (`Busy`), refused by the store, lacking its run context,
    /// or cancelled while it waited (`aborted`, no error). It wrote nothing. Like every turn it
    /// ends in on_chat_response, once, then on_session_end; an error first runs
    /// classify_chat_error and on_chat_error (the user's message not stored).
    async fn unstarted(self, status: TurnStatus, error: Option<TurnError>) -> TurnResult {
        let mut result = TurnResult {
            request_id: self.request_id.clone(),
            agent: self.frame.clone(),
            status,
            text: Text::new(),
            stop_reason: None,
            steps: Vec::new(),
            messages: Vec::new(),
            usage: Usage::default(),
            total_usage: Usage::default(),
            error: None,
            classification: None,
            pending: Vec::new(),
            resumed: Vec::new(),
            output: None,
        };
        if let Some(error) = error {
            let stage = match error.kind {
                TurnErrorKind::Store => ErrorStage::Persist,
                TurnErrorKind::Context => ErrorStage::Parse,
                _ => ErrorStage::Turn,
            };
            let failure = Failure {
                error,
                stage,
                classification: None,
                messages_persisted: false,
            };
            fail(&self.agent.hooks, &self.frame, failure, &mut result).await;
        }
        let response = ChatResponse {
            agent: self.frame.clone(),
            request_id: self.request_id.clone(),
            message: Message::assistant(""),
            continuation: self.continuation,
            status: result.status,
            error: result.error.clone(),
            pending: Vec::new(),
            output: None,
        };
        let _ = observe_every(&self.agent.hooks.on_chat_response, &response).await;
        if !self.agent.hooks.on_session_end.is_empty() {
            lifecycle::session_end(self.agent, &self.frame, self.session_id, &result).await;
        }
        self.emit(TurnEvent::Finished(result.clone())).await;
        result
    }

    /// Finishes what a turn cut off by a crash left behind (see [`store::repairs`]; the calls
    /// waiting for an answer are left alone), and returns the session's rows as they now stand.
    async fn repair(
        &self,
        rows: Vec<StoredMessage>,
        suspended: &[SuspendedCall],
    ) -> Flow<Vec<StoredMessage>> {
        let repairs = store::repairs(&rows, suspended);
        if repairs == store::Repairs::default() {
            return Ok(rows);
        }
        tracing::warn!(
            session = %self.session_id,
            stale = repairs.stale.len(),
            unanswered = repairs.unanswered.len(),
            "repairing a session whose last turn was cut off"
        );
        for id in repairs.stale {
            let failed = MessageUpdate {
                status: Some(MessageStatus::Failed),
                ..MessageUpdate::default()
            };
            self.update(id, failed).await?;
        }
        for message in repairs.unanswered {
            self.insert(NewMessage::completed(message)).await?;
        }
        match self.agent.store.load(self.session_id).await {
            Ok(rows) => Ok(rows),
            Err(error) => Err(End::Failed(store_error(error), ErrorStage::Persist)),
        }
    }

    /// before_run, before_turn, the calls a resumed turn runs, and the step loop.
    async fn drive(&mut self, request: Box<TurnRequest>) -> End {
        // Boxed: the turn's start (2 KB) would otherwise size the steps' future while they
        // run; the box is gone before the first model call.
        let mut plan = match boxed(|| self.begin(request)).await {
            Ok(plan) => plan,
            Err(end) => return end,
        };
        // Not a `match` on the resume's result: its 80 bytes would be kept beside the steps'
        // future for the whole turn. Boxed, and only for a turn that resumes waiting calls:
        // its 2.7 KB would otherwise size every turn's steps.
        if self.session.resume.is_some()
            && let Err(end) = Box::pin(self.resume(&mut plan)).await
        {
            return end;
        }
        let end = self.steps_recovering(&mut plan).await;
        // Offered back only to a store that would keep it: a short history, or any history for
        // a store that keeps none, is freed here without a call (`whole_turn_agent` in
        // agent-providers/benches/stream.rs).
        let store = &self.agent.store;
        let kept = plan
            .lent_history()
            .filter(|history| store.keeps_history(history.len()));
        if let Some(history) = kept {
            store.keep_history(self.session_id, history);
        }
        end
    }

    /// on_session_start, before_run and the input guardrails, the history with the turn's
    /// input stored, then before_turn: the plan the steps run.
    async fn begin(&mut self, request: Box<TurnRequest>) -> Flow<TurnPlan<'a>> {
        // The session's and the run's hooks, the input guardrails and the session's setup,
        // awaited only when there are some: a turn makes none of their futures (nor the run's
        // context) otherwise (`whole_turn_agent` in agent-providers/benches/stream.rs).
        if !self.agent.hooks.on_session_start.is_empty() {
            self.session_start().await?;
        }
        let input =
            if self.agent.hooks.before_run.is_empty() && self.agent.input_guardrails.is_empty() {
                request.input
            } else {
                let run_ctx = RunContext {
                    agent: self.frame.clone(),
                    request_id: self.request_id.clone(),
                    input: request.input,
                    continuation: request.continuation,
                };
                self.before_run(&run_ctx, &request.messages).await?;
                run_ctx.input
            };
        let input = (!input.is_empty()).then(|| Message::user(input));
        let (messages, lent) = self
            .history_with(request.messages, input, request.resume)
            .await?;
        let system = match &self.agent.configure_session {
            None => self.agent.instructions.clone(),
            Some(configure) => self.session_prompt(configure).await?,
        };
        self.join_session_extensions();
        let (config, system, messages) = if self.agent.hooks.before_turn.is_empty()
            && !extensions::subscribed(&self.extensions, ExtensionEvent::BeforeTurn)
        {
            // Nothing reads the turn's context: it is not built (a copy of the tool list and
            // of the model's id, two allocations a turn: `whole_turn_agent` in
            // agent-providers/benches/stream.rs).
            (TurnConfig::default(), system, messages)
        } else {
            let turn_ctx = TurnContext {
                agent: self.frame.clone(),
                request_id: self.request_id.clone(),
                system,
                messages,
                tools: self.agent.specs.clone(),
                model: self.agent.model.id().to_owned(),
                continuation: self.continuation,
                body: request.body,
            };
            let config = self.before_turn(&turn_ctx).await?;
            let TurnContext {
                system, messages, ..
            } = turn_ctx;
            (config, system, messages)
        };
        let mut plan = TurnPlan::new(self.agent, config, system, messages, lent);
        plan.output_retries = request.output_retries;
        if let Some(open) = &self.session.open {
            let more = &open.config.run_hooks;
            RunScope::join(&mut self.run, more);
        }
        if let Some(run) = &mut self.run {
            run.fire(&self.me, "on_agent_start", |hooks, agent| {
                hooks.on_agent_start(agent)
            });
            run.started = true;
        }
        Ok(plan)
    }

    /// before_run, then the input guardrails: before the input is stored or any model sees it.
    /// The guardrails read the user's messages given with the request
    /// ([`TurnRequest::messages`], `run_messages`) too, then the input, one per line: user
    /// text the turn stores does not pass them by.
    async fn before_run(&self, run_ctx: &RunContext, messages: &[Message]) -> Flow {
        let agent = self.agent;
        let failed = |error| End::Failed(error, ErrorStage::Turn);
        observe(&agent.hooks.before_run, run_ctx)
            .await
            .map_err(failed)?;
        if agent.input_guardrails.is_empty() {
            return Ok(());
        }
        let user_text = messages
            .iter()
            .filter(|message| matches!(message, Message::User { .. }))
            .map(Message::text)
            .chain(Some(run_ctx.input.as_str()))
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        if !user_text.is_empty() {
            let input = GuardrailKind::Input;
            let guardrails = &agent.input_guardrails;
            let checked = guardrails::check(guardrails, input, &user_text, &self.cancel);
            checked.await.map_err(failed)?;
        }
        Ok(())
    }

    /// The session's history (loaded, repaired, filtered), with the request's messages and
    /// then its input (none for a continuation) stored before anything reads them, and whether
    /// it is the history the store lent (`load_history`), unchanged, with the turn's messages
    /// after it. A session with calls waiting for an answer takes only a turn that resumes it
    /// (`resume`).
    async fn history_with(
        &mut self,
        request_messages: Vec<Message>,
        input: Option<Message>,
        resume: bool,
    ) -> Flow<(Vec<Message>, bool)> {
        let agent = self.agent;
        let persist = |error| End::Failed(store_error(error), ErrorStage::Persist);
        let suspended = agent
            .store
            .suspended(self.session_id)
            .await
            .map_err(persist)?;
        self.check_suspension(&suspended, resume)?;
        // Room for the turn's input and a tool call's step (the call, its result, the answer),
        // and an eighth more of a long history for the turn's further steps: a push onto a
        // full history doubles it (a copy of it all, and for a long one an allocation large
        // enough that the allocator maps fresh pages for it each turn:
        // `whole_turn_history_agent` in agent-providers/benches/stream.rs), while a short
        // session's turn in flight keeps no spare room (`cargo bench -p agent-core --bench
        // sessions`). A store that answers `load_history` allocates this room itself: no
        // second allocation and copy of the whole history (the same bench).
        let input_len = request_messages.len() + usize::from(input.is_some());
        let capacity = |history: usize| history.saturating_add(input_len + 3 + history / 8);
        // Nothing reads the rows (no filter_messages hook, no waiting call, no resume): the
        // store may hand over the messages alone, without building each row.
        let direct = if !resume && suspended.is_empty() && agent.hooks.filter_messages.is_empty() {
            let loaded = agent.store.load_history(self.session_id, &capacity).await;
            loaded.map_err(persist)?
        } else {
            None
        };
        let (mut messages, lent) = match direct {
            // A store that lends only paired histories is taken at its word: no pass over a
            // long history each turn (`whole_turn_conversation_agent` in
            // agent-providers/benches/stream.rs).
            Some(messages) if agent.store.lends_paired() || message::is_paired(&messages) => {
                (messages, true)
            }
            Some(messages) => (message::paired(messages), false),
            None => (self.history_rows(suspended, resume).await?, false),
        };
        if lent {
            // A lent history lives from turn to turn and grows by doubling: room for this turn
            // alone, made only when it lacks it (the eighth more would move it all each turn).
            messages.reserve(input_len + 3);
        } else {
            // No-op when the store made the room; rows repaired or paired come without it.
            messages.reserve_exact(capacity(messages.len()) - messages.len());
        }
        for message in request_messages.into_iter().chain(input) {
            let (written, stored, flow) = self
                .insert_tracked(NewMessage::completed(message.clone()))
                .await;
            // on_chat_error reads what is stored, even when an after-hook then failed.
            self.outcome.user_persisted |= written.is_some();
            flow?;
            messages.push(as_stored(message, stored));
        }
        self.outcome.user_persisted = true;
        Ok((messages, lent))
    }

    /// The session's history from its rows: loaded, repaired, filtered by filter_messages;
    /// up to the waiting calls' row for a session with calls waiting.
    async fn history_rows(
        &mut self,
        suspended: Vec<SuspendedCall>,
        resume: bool,
    ) -> Flow<Vec<Message>> {
        let agent = self.agent;
        let persist = |error| End::Failed(store_error(error), ErrorStage::Persist);
        let rows = agent.store.load(self.session_id).await.map_err(persist)?;
        let rows = self.repair(rows, &suspended).await?;
        let row = suspended.first().map(|waiting| waiting.row);
        if resume {
            // From the stored rows, whatever filter_messages shows the model.
            self.session.resume = Some(resume::still_to_run(suspended, &rows));
        }
        let session = self.session_id;
        let rows = history::filter_rows(&agent.hooks, &self.frame, session, rows)
            .await
            .map_err(|error| End::Failed(error, ErrorStage::Turn))?;
        Ok(match row {
            Some(row) => store::history_resuming(rows, row),
            None => store::history(rows),
        })
    }

    /// Adds the open session's extensions to the agent's (known once the session is open).
    fn join_session_extensions(&mut self) {
        if let Some(open) = &self.session.open
            && !open.config.extensions.is_empty()
        {
            let all = self.agent.extensions.iter().chain(&open.config.extensions);
            self.extensions = all.cloned().collect();
        }
    }

    /// before_turn's hooks, then the extensions' beforeTurn answers, merged into one
    /// configuration.
    async fn before_turn(&self, turn_ctx: &TurnContext) -> Flow<TurnConfig> {
        let agent = self.agent;
        let mut config = TurnConfig::default();
        each(&agent.hooks.before_turn, turn_ctx, |c| {
            if let Some(c) = c {
                config.merge(c)
            }
        })
        .await
        .map_err(|error| End::Failed(error, ErrorStage::Turn))?;
        let event = ExtensionEvent::BeforeTurn;
        let snapshot = || extensions::turn_snapshot(turn_ctx);
        for answer in extensions::dispatch(&self.extensions, event, snapshot).await {
            extensions::merge_turn_answer(&mut config, &answer);
        }
        Ok(config)
    }

    /// Settles the rows the steps left open, builds the result, runs after_run (whose failure
    /// fails the turn after its result is built), classifies an error and runs on_chat_error,
    /// then the response hooks (boxed by [`Turn::run`]).
    ///
    /// The turn is borrowed, not moved in: moved, its 880 bytes were copied twice on the way
    /// into this future, which then held them too (`whole_turn_agent` in
    /// agent-providers/benches/stream.rs). Not an `async fn`: one would keep its end and its
    /// lease twice, as arguments and as moved (`-Zprint-type-sizes`). And one future, not the
    /// settling's awaiting the finishing's: Rust makes an awaited future on the stack and
    /// copies it into its caller's, 2.4 KB twice a turn for this one.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn would keep `end` and `lease` twice"
    )]
    fn finish(&mut self, end: End, lease: TurnLease) -> impl Future<Output = TurnResult> + '_ {
        async move {
            let end = if self.open.is_settled() {
                end
            } else {
                self.settle(end).await
            };
            if let Some(run) = self.run.as_ref().filter(|run| run.started) {
                if let Some(report) = &self.outcome.attempts.last {
                    run.fire(&self.me, "on_agent_output", |hooks, agent| {
                        hooks.on_agent_output(agent, report)
                    });
                }
                let output = match &end {
                    End::Completed(_) => self.outcome.text.as_str(),
                    _ => "",
                };
                run.fire(&self.me, "on_agent_end", |hooks, agent| {
                    hooks.on_agent_end(agent, output)
                });
            }
            let agent = self.agent;
            let outcome = std::mem::take(&mut self.outcome);
            let hooks = &agent.hooks;
            let mut result = TurnResult {
                request_id: self.request_id.clone(),
                agent: self.me.clone(),
                status: TurnStatus::Completed,
                text: outcome.text,
                stop_reason: None,
                steps: outcome.steps,
                messages: outcome.added,
                usage: outcome.usage,
                total_usage: total_usage(outcome.usage, outcome.subagent_usage),
                error: None,
                classification: None,
                pending: outcome.pending,
                resumed: outcome.resumed,
                output: outcome.output,
            };
            self.span
                .record("gen_ai.usage.input_tokens", result.usage.input_tokens);
            self.span
                .record("gen_ai.usage.output_tokens", result.usage.output_tokens);
            let failed = match end {
                End::Completed(reason) => {
                    result.stop_reason = Some(reason);
                    // after_run sees the completed result; failing (its default policy) it fails
                    // the turn, keeping what the result holds.
                    if hooks.after_run.is_empty() {
                        None
                    } else {
                        observe_every(&hooks.after_run, &result)
                            .await
                            .err()
                            .map(|error| (error, ErrorStage::Turn, None))
                    }
                }
                End::Aborted => {
                    result.status = TurnStatus::Aborted;
                    None
                }
                End::Suspended => {
                    result.status = TurnStatus::Suspended;
                    None
                }
                End::Failed(error, stage) => {
                    Some((error, stage, self.session.classification.take()))
                }
            };
            if let Some((error, stage, classification)) = failed {
                let failure = Failure {
                    error,
                    stage,
                    classification,
                    messages_persisted: outcome.user_persisted,
                };
                fail(&agent.hooks, &self.frame, failure, &mut result).await;
            }
            // The session is released before on_chat_response, so the hook may start a new turn.
            lease.release().await;
            if !hooks.on_chat_response.is_empty() {
                // Built only for a hook: it copies the last answer, the waiting calls and the error.
                let answer = outcome.attempts.last;
                let (frame, request_id) = (self.frame.clone(), self.request_id.clone());
                let response = chat_response(frame, request_id, self.continuation, &result, answer);
                let _ = observe_every(&hooks.on_chat_response, &response).await;
            }
            if !hooks.on_session_end.is_empty() {
                lifecycle::session_end(agent, &self.frame, self.session_id, &result).await;
            }
            if let Some(sink) = &self.sink {
                let _ = sink.send(TurnEvent::Finished(result.clone())).await;
            }
            result
        }
    }
}

/// A turn's usage with its subagents' turns'.
fn total_usage(own: Usage, subagents: std::sync::Mutex<Usage>) -> Usage {
    let mut total = own;
    total.add(
        &subagents
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner),
    );
    total
}

/// What on_chat_response reads of a finished turn: its last assistant message (an empty one
/// when it has none), its status, error and waiting calls, and its typed answer.
fn chat_response(
    agent: Arc<RunAgent>,
    request_id: Arc<str>,
    continuation: bool,
    result: &TurnResult,
    output: Option<OutputReport>,
) -> ChatResponse {
    let message = result
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }))
        .cloned()
        .unwrap_or_else(|| Message::assistant(""));
    ChatResponse {
        agent,
        request_id,
        message,
        continuation,
        status: result.status,
        error: result.error.clone(),
        pending: result.pending.clone(),
        output,
    }
}

/// How a turn failed, before its error hooks ran.
struct Failure {
    error: TurnError,
    stage: ErrorStage,
    /// Made already (by the overflow recovery), or to make with classify_chat_error.
    classification: Option<ChatErrorClassification>,
    messages_persisted: bool,
}

/// classify_chat_error and on_chat_error: marks `result` as failed with the error surfaced
/// (a hook's replacement, or the original).
async fn fail(hooks: &TurnHooks, frame: &Arc<RunAgent>, failure: Failure, result: &mut TurnResult) {
    let Failure {
        error,
        stage,
        classification,
        messages_persisted,
    } = failure;
    tracing::warn!(stage = stage.as_str(), "turn failed: {error}");
    let classification = match classification {
        Some(classification) => classification,
        None => classify::classify(hooks, frame, &error, stage).await,
    };
    let ctx = ChatErrorContext {
        agent: frame.clone(),
        request_id: frame.request_id.clone(),
        error,
        stage,
        messages_persisted,
        classification,
        partial_text: result.text.to_string(),
    };
    let mut surfaced = None;
    let _ = every(&hooks.on_chat_error, &ctx, |e| {
        surfaced = e.or(surfaced.take())
    })
    .await;
    result.status = TurnStatus::Error;
    result.error = Some(surfaced.unwrap_or(ctx.error));
    result.classification = Some(classification);
}
