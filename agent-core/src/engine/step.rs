//! One step of a turn: before_step and the history prefilter, the model call (`model_call`),
//! the reply's post-processing and storage, its tool calls (`tool_calls`), and on_step_finish.

use std::sync::{Arc, PoisonError};

use super::guardrails;
use super::history;
use super::model_call::Answer;
use super::model_stream::StepStream;
use super::output::{self, Verdict};
use super::plan::TurnPlan;
use super::reach::StepAllowance;
use super::reply::Reply;
use super::state::{End, Flow, Turn, as_stored};
use super::traced::in_span;
use crate::hooks::extension::{self as extensions, ExtensionEvent};
use crate::hooks::{
    Chunk, ErrorStage, GuardrailKind, StepConfig, StepContext, StepRecord, StopContext,
    StopDecision, StopReason, ToolOutcomeKind, ToolResultRecord, TurnError, TurnErrorKind, each,
    observe,
};
use crate::message::{Message, ToolCall};
use crate::model::{Model, ModelErrorKind, ModelRequest, ToolChoice};
use crate::store::{self, MessageStatus, MessageUpdate};
use crate::text::Text;
use crate::util::{BoxFuture, boxed};

/// What a step's tool calls produced.
pub(super) struct CallsDone {
    /// The results the model reads, in its call order (dropped calls left out).
    pub(super) results: Vec<ToolResultRecord>,
    /// A fail-closed after_tool_call hook failed: the turn fails after this step.
    pub(super) failed_hook: Option<TurnError>,
    /// An allowed handoff: the current agent's handoff at this index takes over next step.
    pub(super) handoff: Option<usize>,
}

impl<'a> Turn<'a> {
    /// The step loop: steps until one ends the turn, then on_stop when the step limit is hit.
    /// A handoff gives the target its own step limit, counted from its first step and shared
    /// by every time it takes the turn ([`StepAllowance`]).
    pub(super) async fn steps(&mut self, plan: &mut TurnPlan<'a>) -> End {
        let mut step = 0;
        let mut limit = plan.max_steps;
        let mut allowance = StepAllowance::new(self.current, limit);
        while step < limit {
            if self.cancel.is_cancelled() {
                return End::Aborted;
            }
            if let Some((reason, why)) = self.limits.as_ref().and_then(|l| l.reached()) {
                return self.stop(reason, why).await;
            }
            let span = tracing::info_span!(
                "step",
                otel.name = %format_args!("step {step}"),
                gen_ai.agent.name = %self.current.name,
                gen_ai.agent.step = step,
            );
            plan.last_step = step + 1 >= limit;
            // Not a `match` around the handoff: the step's result (80 bytes) would be kept
            // beside the step's future the whole time.
            let handoff = match in_span!(span, self.step(plan, step)) {
                Err(end) => return end,
                Ok(handoff) => handoff,
            };
            if let Some(handoff) = handoff {
                let from = self.current;
                if let Some(to) = self.hand_off(plan, handoff).await {
                    limit = allowance.hand_off(from, to, plan.max_steps, step);
                }
            }
            step += 1;
        }
        let why = format!(
            "agent `{}` reached its limit of {limit} steps",
            self.current.name
        );
        self.stop(StopReason::MaxSteps, why).await
    }

    /// One step: before_step, the model call, its tool calls, on_step_finish. `Ok` when the
    /// turn goes on to another step (with the handoff the step made, if any).
    async fn step(&mut self, plan: &mut TurnPlan<'a>, step: usize) -> Flow<Option<usize>> {
        // Only an open session compacts: no other step makes the check's future.
        if let Some(open) = self.session.open.clone() {
            self.compact_before_step(open, plan).await?;
        }
        let (model, request) = self.prepare(plan, step).await?;
        let answer = self.call_model(step, &model, request).await?;
        // Boxed when the model has answered: this future is then sized for the model call
        // alone, which a turn waits on for as long as its model takes (the calls' future, 3.5
        // KB, is no longer reserved in it meanwhile, per turn in flight: `cargo bench -p
        // agent-core --bench sessions`). One allocation per step.
        boxed(|| self.answered(plan, step, &*model, answer)).await
    }

    /// The rest of a step once its model answered: the reply settled, its typed answer
    /// checked, its tool calls run and its record made.
    async fn answered(
        &mut self,
        plan: &mut TurnPlan<'a>,
        step: usize,
        model: &dyn Model,
        answer: Answer,
    ) -> Flow<Option<usize>> {
        let reply = self.settle_answer(plan, step, answer).await?;
        // Without an output type there is no answer to check nor settle: neither future (2 KB
        // together) is made and moved on every step. The last step's final-answer results go.
        let verdict = match self.current.output {
            // Boxed, as settling it below: only an agent with an output type checks answers,
            // and the check's code and state stay out of every other agent's steps (this
            // future's code, read on each step: `whole_turn_calls_agent` in
            // agent-providers/benches/stream.rs). One allocation per such step.
            Some(_) => {
                let check: BoxFuture<'_, _> = Box::pin(self.check_output(plan, step, &reply));
                check.await?
            }
            None => {
                plan.output_answers.clear();
                Verdict::None
            }
        };
        // The budget is checked after every model call: a reply that ends past it runs none
        // of its tool calls (the turn's settling answers them), and its step ends the turn
        // through on_stop once recorded.
        let over_budget = self.limits.as_ref().and_then(|limits| limits.over_budget());
        let calls = match over_budget {
            None => self.run_calls(plan, step, &reply).await?,
            Some(_) => CallsDone {
                results: Vec::new(),
                failed_hook: None,
                handoff: None,
            },
        };
        if self.current.reset_tool_choice && !reply.tool_calls.is_empty() {
            plan.tool_choice = ToolChoice::Auto;
        }
        let failure = match &verdict {
            Verdict::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        // A tool past its retry limit ends the turn the same way, its calls all answered.
        let past_retries = plan.past_retry_limit(&calls.results);
        let next = self.record(step, model, reply, calls, failure).await;
        let limit = over_budget.or_else(|| past_retries.map(|why| (StopReason::ToolRetries, why)));
        if let Some((reason, why)) = limit
            && matches!(next, Ok(_) | Err(End::Completed(_)))
        {
            // Boxed: only a run past its budget, or a tool past its retries, makes this future.
            let stop: BoxFuture<'_, _> = Box::pin(self.stop(reason, why));
            return Err(stop.await);
        }
        // One check a step for an agent without stop tools (an agent with them has no output
        // type, so no verdict to settle).
        if !self.current.stop_at_tools.is_empty() && matches!(next, Ok(None) | Err(End::Suspended))
        {
            let results = self.outcome.steps.last().map(|step| &step.tool_results[..]);
            let stops = &self.current.stop_at_tools;
            if let Some(answer) = stop_answer(stops, results.unwrap_or_default()) {
                if next.is_err() {
                    // The step suspended: its answer waits with its calls (`resume.rs`).
                    let keep: BoxFuture<'_, _> = Box::pin(self.keep_stop(answer));
                    keep.await?;
                    return next;
                }
                // Boxed: only a step a stop tool answered makes this future.
                let stop: BoxFuture<'_, End> = Box::pin(self.end_with_stop_answer(answer));
                return Err(stop.await);
            }
        }
        match verdict {
            Verdict::None => next,
            verdict => {
                let settle: BoxFuture<'_, _> =
                    Box::pin(self.settle_output(plan, step, verdict, next));
                settle.await
            }
        }
    }

    /// before_step and prefilter_llm_history: the step's model and request.
    async fn prepare(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
    ) -> Flow<(Arc<dyn Model>, Box<ModelRequest>)> {
        let hooks = &self.current.hooks;
        // The history shared, not copied (see `TurnPlan::messages`).
        let messages = plan.messages.clone();
        let (step_config, messages) = if hooks.before_step.is_empty() {
            // Nothing reads the step's context: it is not made (two counted references taken
            // and dropped, and its future: `whole_turn_agent` in
            // agent-providers/benches/stream.rs).
            (StepConfig::default(), messages)
        } else {
            let step_ctx = StepContext {
                agent: self.me.clone(),
                request_id: self.request_id.clone(),
                step,
                // Only before_step hooks read the earlier steps (a copy of each record).
                previous: self.outcome.steps.clone(),
                messages,
            };
            let mut step_config = StepConfig::default();
            each(&hooks.before_step, &step_ctx, |c| {
                if let Some(c) = c {
                    step_config.merge(c)
                }
            })
            .await
            .map_err(End::turn)?;
            (step_config, step_ctx.messages)
        };
        let model = step_config
            .model
            .clone()
            .unwrap_or_else(|| plan.model.clone());
        let mut request = plan.request(&*model, step_config, messages);
        if !hooks.prefilter_llm_history.is_empty() {
            let messages = std::mem::take(&mut request.messages);
            match history::prefilter(hooks, &self.me, step, messages)
                .await
                .map_err(End::turn)?
            {
                history::Prefiltered::Send(messages) => request.messages = messages,
                // Boxed when it happens: a blocked step's settling (1.5 KB) would otherwise
                // size every step's future.
                history::Prefiltered::Block(message) => {
                    return Err(Box::pin(self.blocked(message)).await);
                }
            }
        }
        // A name that is none of the agent's tools may be a provider's own (a server tool
        // declared in the provider options): the provider judges it.
        if let ToolChoice::Tool(name) = &request.tool_choice
            && !request.tools.iter().any(|tool| tool.name == *name)
            && plan.tools.has(name)
        {
            return Err(not_offered(name, &request));
        }
        Ok((model, Box::new(request)))
    }

    /// Shows the reply a post_process_message hook gave in place of the one streamed, so a
    /// client is never left with a call that will not run or text that is not stored: after
    /// [`Chunk::Discarded`] (or, while the step's chunks are held back, in place of them) its
    /// reasoning, text, and each call's start and whole call, with the typed answer's partials
    /// read from them, as a stream's are (by the step's reader, `Turn::partials`).
    /// Only when the hook changed the text or the calls.
    async fn show_replaced(&self, step: usize, message: &Message) -> Flow {
        let Message::Assistant {
            content,
            reasoning,
            tool_calls,
            ..
        } = message
        else {
            return Ok(());
        };
        // The typed answer's partials follow the replacement: the discard starts its reader
        // over, as it does for a retried stream.
        let partial = self
            .partials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut stream = StepStream::new(self, step).partials(partial.map(|partial| *partial));
        if !stream.listening() {
            return Ok(());
        }
        let holding = match self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            Some(held) => {
                held.clear();
                true
            }
            None => false,
        };
        let reason = "a post_process_message hook replaced the reply".to_owned();
        let discarded = (!holding).then_some(Chunk::Discarded { reason });
        let reasoning =
            (!reasoning.is_empty()).then(|| Chunk::ReasoningDelta((&**reasoning).into()));
        let text = (!content.is_empty()).then(|| Chunk::TextDelta((&**content).into()));
        // A call's arguments are not shown as a chunk of their own (the whole call follows),
        // but its partial answer is read from them, between its start and the call.
        let calls = tool_calls.iter().flat_map(|call| {
            let start = Chunk::ToolInputStart {
                id: call.id.clone(),
                name: call.name.clone(),
            };
            let arguments = Chunk::ToolInputDelta {
                id: call.id.clone(),
                delta: (&*call.arguments).into(),
            };
            [
                (start, true),
                (arguments, false),
                (Chunk::ToolCall(call.clone()), true),
            ]
        });
        let shown = [discarded, reasoning, text].into_iter().flatten();
        for (chunk, show) in shown.map(|chunk| (chunk, true)).chain(calls) {
            let partial = stream.read_partial(&chunk);
            if show {
                stream.chunk(chunk).await.map_err(End::turn)?;
            }
            stream.send_partial(partial).await.map_err(End::turn)?;
        }
        Ok(())
    }

    /// Sends the step's held chunks (an agent with output guardrails), in order; for such an
    /// agent only.
    async fn release(&self, step: usize) -> Flow {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut stream = StepStream::new(self, step);
        for chunk in held.into_iter().flatten() {
            stream.chunk(chunk).await.map_err(End::turn)?;
        }
        Ok(())
    }

    /// post_process_message, then the output guardrails on a final reply, then the reply
    /// stored as completed (or its row deleted when empty).
    async fn settle_answer(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        answer: Answer,
    ) -> Flow<Reply> {
        let assistant = Message::Assistant {
            content: answer.text.clone(),
            reasoning: answer.reasoning.clone(),
            tool_calls: answer.tool_calls.clone(),
            reasoning_signature: answer.reasoning_signature,
            provider_blocks: answer.provider_blocks,
        };
        let reply = history::Reply {
            message: assistant,
            text: answer.text,
            tool_calls: answer.tool_calls,
        };
        let hooks = &self.current.hooks;
        let reply = if hooks.post_process_message.is_empty() {
            reply
        } else {
            let streamed = (reply.text.clone(), reply.tool_calls.clone());
            match history::post_process(hooks, &self.me, step, reply).await {
                Ok(reply) if replaced(&streamed, &reply) => {
                    self.show_replaced(step, &reply.message).await?;
                    reply
                }
                Ok(reply) => reply,
                Err((error, reply)) => {
                    self.open.partial(&reply.message);
                    return Err(End::turn(error));
                }
            }
        };
        // The final output: a reply without tool calls, or the typed answer a final-answer
        // call gives.
        let checked = match reply.tool_calls.is_empty() {
            _ if self.current.output_guardrails.is_empty() => None,
            true => Some(&*reply.text),
            false => {
                output::answer_arguments(self.current.output.as_deref(), plan, &reply.tool_calls)
            }
        };
        if let Some(checked) = checked {
            let checks = &self.current.output_guardrails;
            let output = GuardrailKind::Output;
            let checked = guardrails::check(checks, output, checked, &self.cancel);
            if let Err(error) = checked.await {
                // The output reaches neither the stream nor the store.
                self.held
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                self.discard(answer.row).await?;
                self.open.reply_settled(&[]);
                self.outcome.text = Text::new();
                return Err(End::Failed(error, ErrorStage::Turn));
            }
        }
        // Only an agent with output guardrails holds its chunks back (`call_model`): no other
        // step makes the release's future.
        if !self.current.output_guardrails.is_empty() {
            self.release(step).await?;
        }
        self.outcome.text = reply.text.clone();
        let at = (self.outcome.added.len(), plan.messages.len());
        self.settle_reply(answer.row, reply.message, plan).await?;
        Ok(Reply {
            row: answer.row,
            at,
            text: reply.text,
            reasoning: answer.reasoning,
            tool_calls: reply.tool_calls,
            finish_reason: answer.finish_reason,
            usage: answer.usage,
            provider_metadata: answer.provider_metadata,
        })
    }

    /// Stores a step's reply as completed and adds it to the history, or, when it is empty (no
    /// text, no tool call and no provider block, whatever reasoning it holds), deletes its
    /// pending row: an empty assistant message is never stored nor sent back to the model
    /// (providers reject one).
    async fn settle_reply(
        &mut self,
        row: i64,
        assistant: Message,
        plan: &mut TurnPlan<'_>,
    ) -> Flow {
        let empty = matches!(&assistant, Message::Assistant { content, tool_calls, provider_blocks, .. }
            if content.is_empty() && tool_calls.is_empty() && provider_blocks.is_empty());
        if empty {
            self.discard(row).await?;
            self.open.reply_settled(&[]);
            return Ok(());
        }
        self.open.partial(&assistant);
        let completed = MessageUpdate {
            message: Some(assistant.clone()),
            status: Some(MessageStatus::Completed),
            response_completed_at: Some(store::now_micros()),
            silent: None,
        };
        let (written, stored, flow) = self.update_tracked(row, completed).await;
        if written && let Message::Assistant { tool_calls, .. } = &assistant {
            self.open.reply_settled(tool_calls);
        }
        flow?;
        let assistant = as_stored(assistant, stored);
        self.outcome.added.push(assistant.clone());
        plan.push_history(assistant);
        Ok(())
    }

    /// The step's record (with why its typed answer failed, if it did): on_step_finish, the
    /// stream's `StepFinished`, and whether the turn goes on (it does while the model calls
    /// tools).
    async fn record(
        &mut self,
        step: usize,
        model: &dyn Model,
        reply: Reply,
        calls: CallsDone,
        output_failure: Option<String>,
    ) -> Flow<Option<usize>> {
        let record = StepRecord {
            agent: self.me.clone(),
            step,
            model: model.id().to_owned(),
            text: reply.text,
            reasoning: reply.reasoning,
            tool_calls: reply.tool_calls,
            tool_results: calls.results,
            finish_reason: reply.finish_reason,
            usage: reply.usage,
            provider_metadata: reply.provider_metadata,
            output_failure,
        };
        // Awaited only when there is a hook or an extension to tell: a step makes neither
        // future otherwise (`whole_turn_agent` in agent-providers/benches/stream.rs).
        if !self.current.hooks.on_step_finish.is_empty() {
            observe(&self.current.hooks.on_step_finish, &record)
                .await
                .map_err(End::turn)?;
        }
        if !self.extensions.is_empty() {
            let event = ExtensionEvent::OnStepFinish;
            let snapshot = || extensions::step_snapshot(&record);
            extensions::dispatch(&self.extensions, event, snapshot).await;
        }
        let more = !record.tool_calls.is_empty();
        if self.sink.is_some() {
            // Cloned only for a stream: a record holds the step's whole text.
            self.emit(super::TurnEvent::StepFinished(record.clone()))
                .await;
        }
        self.outcome.steps.push(record);
        if let Some(error) = calls.failed_hook {
            return Err(End::Failed(error, ErrorStage::Turn));
        }
        if self.cancel.is_cancelled() {
            return Err(End::Aborted);
        }
        if !self.outcome.pending.is_empty() {
            // A handoff the step made is kept with the waiting calls (`resume.rs`).
            return Err(End::Suspended);
        }
        if !more {
            return Err(End::Completed(StopReason::Finished));
        }
        Ok(calls.handoff)
    }

    /// A stop tool's result ends the turn as its answer, once the output guardrails passed it,
    /// as they pass a final reply (a trip fails the turn).
    pub(super) async fn end_with_stop_answer(&mut self, answer: Text) -> End {
        let checks = &self.current.output_guardrails;
        if !checks.is_empty() {
            let checked = guardrails::check(checks, GuardrailKind::Output, &answer, &self.cancel);
            if let Err(error) = checked.await {
                return End::Failed(error, ErrorStage::Turn);
            }
        }
        self.outcome.text = answer;
        End::Completed(StopReason::Tool)
    }

    /// on_stop: a limit (`why` says which) ended the turn.
    pub(super) async fn stop(&mut self, reason: StopReason, why: String) -> End {
        let ctx = StopContext {
            agent: self.me.clone(),
            request_id: self.request_id.clone(),
            reason,
            steps: self.outcome.steps.len(),
            text: self.outcome.text.clone(),
            usage: match &self.limits {
                Some(limits) => limits.usage(),
                None => {
                    let mut usage = self.outcome.usage;
                    let subagents = self.outcome.subagent_usage.lock();
                    usage.add(&subagents.unwrap_or_else(PoisonError::into_inner));
                    usage
                }
            },
        };
        let mut decision = StopDecision::Default;
        let decided = each(&self.current.hooks.on_stop, &ctx, |d| {
            if d != StopDecision::Default {
                decision = d;
            }
        });
        if let Err(error) = decided.await {
            return End::Failed(error, ErrorStage::Turn);
        }
        match decision {
            StopDecision::Default if reason == StopReason::MaxSteps => End::Completed(reason),
            StopDecision::Default => End::Failed(
                TurnError::new(TurnErrorKind::Limit(reason), why),
                ErrorStage::Turn,
            ),
            StopDecision::Complete => End::Completed(reason),
            StopDecision::Output(text) => {
                let text = Text::from(text);
                if let Err(end) = self.add(Message::assistant(text.clone())).await {
                    return end;
                }
                self.outcome.text = text;
                End::Completed(reason)
            }
            StopDecision::Fail(message) => End::Failed(
                TurnError::new(TurnErrorKind::Stopped, message),
                ErrorStage::Turn,
            ),
        }
    }
}

/// Whether post_process_message changed what the step streamed: its text or its tool calls.
fn replaced((text, calls): &(Text, Arc<[ToolCall]>), reply: &history::Reply) -> bool {
    *text != reply.text || !(Arc::ptr_eq(calls, &reply.tool_calls) || *calls == reply.tool_calls)
}

/// The text of the first of `results` that answers a call of a tool in `stops` (its tool ran,
/// or a gate substituted its output, and it is not an error): the turn's answer
/// (`AgentBuilder::stop_at_tools`).
pub(super) fn stop_answer(stops: &[Arc<str>], results: &[ToolResultRecord]) -> Option<Text> {
    let answer = results.iter().find(|result| {
        let ran = matches!(
            result.outcome,
            ToolOutcomeKind::Executed | ToolOutcomeKind::Substituted
        );
        ran && !result.is_error && stops.iter().any(|name| **name == *result.name)
    });
    answer.map(|answer| answer.content.clone())
}

/// A step whose tool choice names one of the agent's tools that the step does not offer (a
/// `before_turn` or `before_step` hook's `tool_choice`, with `active_tools` leaving it out,
/// say): the provider would refuse the request, so it is not sent, and the turn fails saying
/// which tool and what was offered.
#[cold]
fn not_offered(name: &str, request: &ModelRequest) -> End {
    let offered: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    let offered = match offered.is_empty() {
        true => "none".to_owned(),
        false => offered.join(", "),
    };
    let message = format!(
        "the step's tool_choice names the tool `{name}`, which the step does not offer (it \
         offers: {offered}); choose one of its tools, or add `{name}` to its active_tools"
    );
    let kind = TurnErrorKind::Model(ModelErrorKind::BadRequest);
    End::Failed(TurnError::new(kind, message), ErrorStage::Turn)
}
