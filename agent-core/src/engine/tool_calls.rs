//! A step's tool calls: run concurrently (`tool_call` runs each one with its hooks), then each
//! result, in the model's order, through before_store_tool_result, the store and on_chunk. The
//! calls that wait for an answer are kept with the session first (`resume` runs them later).

use std::collections::HashSet;
use std::sync::Arc;
use std::task::Poll;

use super::handoff;
use super::history;
use super::limits;
use super::model_stream::StepStream;
use super::output;
use super::plan::CallScope;
use super::plan::TurnPlan;
use super::preliminary;
use super::reply::Reply;
use super::run_scope;
use super::state::{AnswerRow, End, Flow, Turn, as_stored, store_error};
use super::step::CallsDone;
use super::subagent_call::Resume;
use super::tool_call::{self, CallResult, Started};
use super::tool_results;
use crate::hooks::{Chunk, ErrorStage, TurnError};
use crate::message::{Message, ToolCall};
use crate::store::{self, CallAnswer, NewMessage, SuspendedCall};
use crate::tool::{Preliminary, Reported};
use crate::util::{BoxFuture, join_ordered};

impl Turn<'_> {
    /// Runs the reply's tool calls and stores their results. A cancelled turn answers every
    /// call with an error result (the stored history stays valid) and ends as aborted.
    pub(super) async fn run_calls(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        reply: &Reply,
    ) -> Flow<CallsDone> {
        let mut done = CallsDone {
            results: Vec::with_capacity(reply.tool_calls.len()),
            failed_hook: None,
            handoff: None,
        };
        if reply.tool_calls.is_empty() {
            return Ok(done);
        }
        self.read_approved_tools().await?;
        // Cancelled: the turn's settling answers every call (`settle.rs`).
        let executed = self.execute_all(plan, step, &reply.tool_calls, &[], Vec::new());
        let Some((results, failed)) = executed.await else {
            return Err(End::Aborted);
        };
        done.failed_hook = failed;
        // Calls that wait, and calls a hook dropped, are rare: their futures are boxed, their
        // code and state kept out of this one's, which every step with tool calls runs (the
        // slope of `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
        if results.iter().any(|result| !result.pending.is_empty()) {
            let suspend: BoxFuture<'_, _> = Box::pin(self.suspend(reply.row, step, &results));
            suspend.await?;
        }
        let dropped = self.store_results(plan, step, results, &mut done).await?;
        if !dropped.is_empty() {
            let history = plan.history_mut();
            let dropping: BoxFuture<'_, _> =
                Box::pin(self.drop_calls(reply.row, reply.at, &dropped, history));
            dropping.await?;
        }
        Ok(done)
    }

    /// Reads the session's tools approved for good, once per turn, before its first tool calls
    /// run (a turn without tool calls never reads them).
    pub(super) async fn read_approved_tools(&mut self) -> Flow {
        if self.session.approved_tools.is_none() {
            let approved = self.agent.store.approved_tools(self.session_id).await;
            let approved =
                approved.map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))?;
            self.session.approved_tools = Some(approved);
        }
        Ok(())
    }

    /// The calls of `results` that wait for an answer, as the session keeps them (sealed with
    /// a token when the agent has an approval key), each with the handoff a transfer call of
    /// the step made.
    pub(super) fn waiting_in(
        &self,
        row: i64,
        step: usize,
        results: &[CallResult],
    ) -> Vec<SuspendedCall> {
        let handoffs = &self.current.handoffs;
        let handoff = results
            .iter()
            .find_map(|result| result.handoff)
            .and_then(|index| handoffs.get(index))
            .map(|slot| slot.to.to_string());
        results
            .iter()
            .flat_map(|result| {
                result
                    .pending
                    .iter()
                    .map(|call| (call.clone(), &result.via))
            })
            .map(|(mut call, via)| {
                // Sealed for this session and row (a subagent's own seal is for its session).
                call.token = (self.agent.approval_key.as_ref())
                    .map(|key| store::call_token(key, self.session_id, row, &call));
                SuspendedCall {
                    call,
                    row,
                    step,
                    agent: self.current.name.to_string(),
                    handoff: handoff.clone(),
                    answer: None,
                    started_at: None,
                    via: via.as_deref().cloned(),
                    stop: None,
                }
            })
            .collect()
    }

    /// Keeps the calls that wait for an answer with the session, before any result of their
    /// step is stored (a crash in between leaves them waiting, the others repaired).
    async fn suspend(&mut self, row: i64, step: usize, results: &[CallResult]) -> Flow {
        let waiting = self.waiting_in(row, step, results);
        if waiting.is_empty() {
            return Ok(());
        }
        self.agent
            .store
            .set_suspended(self.session_id, waiting.clone())
            .await
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))?;
        self.kept_waiting(results);
        self.outcome.pending = waiting.into_iter().map(|waiting| waiting.call).collect();
        Ok(())
    }

    /// Takes the calls of `results` that wait, now kept with the session, off the calls the
    /// turn settles: a turn that ends while the step's other results are stored (a cancel, a
    /// failing result hook) must not answer them with an error result, which would leave them
    /// answered and waiting at once.
    pub(super) fn kept_waiting(&mut self, results: &[CallResult]) {
        for (position, result) in results.iter().enumerate() {
            if !result.pending.is_empty() {
                self.open.answered(position);
            }
        }
    }

    /// Each result, in the model's order, through before_store_tool_result, the store and
    /// on_chunk, into `done`; a waiting call is skipped (it has no result yet). Returns the
    /// positions of the calls a result hook dropped.
    pub(super) async fn store_results(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        results: Vec<CallResult>,
        done: &mut CallsDone,
    ) -> Flow<HashSet<usize>> {
        // By position: ids are not unique (a model may send one id twice in a step).
        let mut dropped = HashSet::new();
        // Room for the step's results and the reply after them: pushed one by one, the turn's
        // messages and the history would double (moving all they hold) each time a step's
        // results outgrow them (the slope of `whole_turn_calls_agent` in
        // agent-providers/benches/stream.rs).
        let kept = results
            .iter()
            .filter(|result| result.pending.is_empty() && !result.dropped);
        let room = kept.count() + 1;
        if room > 1 {
            self.outcome.added.reserve(room);
            plan.reserve_history(room);
        }
        for (position, result) in results.into_iter().enumerate() {
            let mut record = result.record;
            done.failed_hook = done.failed_hook.take().or(result.error.map(|error| *error));
            done.handoff = done.handoff.or(result.handoff);
            if !result.pending.is_empty() {
                // Kept waiting, and off the calls to settle (`kept_waiting`).
                continue;
            }
            if result.dropped {
                dropped.insert(position);
                continue;
            }
            let hooks = &self.current.hooks;
            let mut message = history::tool_message(&record);
            if !hooks.before_store_tool_result.is_empty() {
                let stored = history::tool_result(hooks, &self.me, step, &mut record, message);
                message = stored.await.map_err(End::turn)?;
            }
            // Each result is stored as it is appended, in the model's call order, then shown:
            // a before_create_message hook may change the row, which the model then reads, so
            // the result is shown and recorded as stored.
            let (written, stored, flow) = self
                .insert_tracked(NewMessage::completed(message.clone()))
                .await;
            let rewritten = stored.is_some();
            let message = as_stored(message, stored);
            if rewritten
                && let Message::Tool {
                    content, is_error, ..
                } = &message
            {
                record.content = content.clone();
                record.is_error = *is_error;
            }
            let mut stream = StepStream::new(self, step);
            if stream.listening() {
                let chunk = Chunk::ToolResult {
                    id: record.call_id.clone(),
                    name: record.name.clone(),
                    content: record.content.clone(),
                    is_error: record.is_error,
                };
                if let Some(rest) = stream.show(chunk).map_err(End::turn)? {
                    stream.rest(rest).await.map_err(End::turn)?;
                }
            }
            if let Some(row) = written {
                self.open.answered(position);
                self.outcome.added.push(message.clone());
                if output::accepted(plan, position) {
                    self.open.answer = Some(AnswerRow::Call(row, message.clone()));
                }
            }
            flow?;
            plan.push_history(message);
            done.results.push(record);
        }
        Ok(dropped)
    }

    /// Runs the calls concurrently (up to the agent's limit), results in the model's order,
    /// forwarding their preliminary results to on_chunk and the stream API as they come;
    /// `None` when the turn was cancelled first. A fail-closed on_chunk hook failing on a
    /// preliminary result fails the turn after the step. `approvals` holds, by position, the
    /// answer that approved each call of a resumed turn (empty for a step's own calls); a call
    /// of a tool the session approved for good runs as approved. `resumes` holds, by position,
    /// the suspended subagent turn each call to a subagent resumes.
    pub(super) async fn execute_all(
        &self,
        plan: &TurnPlan<'_>,
        step: usize,
        calls: &[ToolCall],
        approvals: &[Option<CallAnswer>],
        resumes: Vec<Option<Resume>>,
    ) -> Option<(Vec<CallResult>, Option<TurnError>)> {
        let progress = Arc::new(Reported::default());
        // The tool-call hooks read the history shared, not copied (see `TurnPlan::messages`).
        let scope = CallScope {
            session: (&self.agent.store, self.session_id),
            request_id: &self.request_id,
            step,
            messages: &plan.messages,
            cancel: &self.cancel,
            tools: &plan.tools,
            run: self.run.as_ref(),
            me: &self.me,
            reach: self.reach,
            inherited: &self.inherited,
            extensions: &self.extensions,
            progress: &progress,
            subagent_usage: &self.outcome.subagent_usage,
            now: self.extensions.is_empty()
                && self.inherited.is_sync()
                && !tool_results::wanted_any(&plan.tools.agent.hooks),
        };
        // A call of a tool approved for good runs as approved; a resumed one by its answer.
        let standing = CallAnswer::ApproveAlways;
        let (entry, current) = (&*self.agent.name, &*self.current.name);
        let approval = |position: usize, call: &ToolCall| {
            let approved = self.session.approved_tools.as_deref().unwrap_or_default();
            let granted = approved
                .iter()
                .any(|kept| store::is_standing(kept, entry, current, &call.name));
            approvals
                .get(position)
                .and_then(Option::as_ref)
                .or_else(|| granted.then_some(&standing))
        };
        // A cancelled turn runs none of its calls, not even those that would run on the spot.
        if self.cancel.is_cancelled() {
            return None;
        }
        // The first transfer call of the step is decided by before_handoff; another is refused.
        let mut handoffs = 0;
        let mut resumes = resumes.into_iter();
        // The calls that finish on the spot, in order, until the first that goes on as a
        // future: it and those after it are joined below (so the calls still start in the
        // model's order).
        let mut results = Vec::with_capacity(calls.len());
        let mut futures: Vec<BoxFuture<'_, CallResult>> = Vec::new();
        for (position, call) in calls.iter().enumerate() {
            let resume = resumes.next().flatten();
            // A call the typed answer settled first (a final-answer call, a transfer the
            // accepted answer left untaken), then a transfer, then a tool.
            let answered = output::answered(plan, position);
            let handoff = answered
                .is_none()
                .then(|| plan.tools.handoff(&call.name))
                .flatten();
            let future = match handoff {
                Some(index) => {
                    handoffs += 1;
                    Box::pin(handoff::decide(&scope, call, index, handoffs == 1))
                }
                None => match answered {
                    Some(answered) if futures.is_empty() => {
                        results.push(answered);
                        continue;
                    }
                    Some(answered) => Box::pin(std::future::ready(answered)),
                    None if futures.is_empty() => {
                        let approval = approval(position, call);
                        match tool_call::start(&scope, position, call, approval, resume) {
                            Started::Done(result) => {
                                results.push(result);
                                continue;
                            }
                            Started::Running(future) => future,
                        }
                    }
                    None => {
                        let approval = approval(position, call);
                        tool_call::later(&scope, position, call, approval, resume)
                    }
                },
            };
            futures.push(future);
        }
        // Every call finished on the spot (they reported nothing: a call that reports goes on
        // as a future): nothing to join, wait on or forward.
        if futures.is_empty() {
            return Some((results, None));
        }
        // A subagent's turn started by one of the calls joins this turn's run.
        let joined = limits::calling(
            self.limits.clone(),
            run_scope::calling(
                self.run.clone(),
                join_ordered(futures, self.current.tool_concurrency),
            ),
        );
        let mut joined = std::pin::pin!(joined);
        let mut cancelled = std::pin::pin!(self.cancel.cancelled());
        let mut stream = StepStream::new(self, step);
        let mut failed = None;
        let mut first = true;
        let finished = loop {
            // A cancel first, then a preliminary result, then the calls; the first time, the
            // calls before the results: a call run on the spot may have reported already, and
            // the calls after it start before its results are forwarded, as when every call
            // is a future (nothing is reported before their first poll). The token's waiter (a
            // lock and a waker clone) is only polled while the calls wait: calls that finish
            // at once never register one (`whole_turn_agent` in
            // agent-providers/benches/stream.rs).
            let next = std::future::poll_fn(|cx| {
                if self.cancel.is_cancelled() {
                    return Poll::Ready(Next::Cancelled);
                }
                let calls_first = std::mem::take(&mut first);
                if !calls_first && let Poll::Ready(reported) = progress.poll_next(cx) {
                    return Poll::Ready(Next::Reported(reported));
                }
                if let Poll::Ready(results) = joined.as_mut().poll(cx) {
                    return Poll::Ready(Next::Done(results));
                }
                if calls_first && let Poll::Ready(reported) = progress.poll_next(cx) {
                    return Poll::Ready(Next::Reported(reported));
                }
                cancelled.as_mut().poll(cx).map(|()| Next::Cancelled)
            });
            match next.await {
                Next::Cancelled => return None,
                Next::Reported(reported) => {
                    let chunk = preliminary::chunk(reported);
                    failed = failed.or(stream.chunk(chunk).await.err());
                }
                Next::Done(finished) => break finished,
            }
        };
        results.extend(finished);
        while let Some(reported) = progress.take() {
            let chunk = preliminary::chunk(reported);
            failed = failed.or(stream.chunk(chunk).await.err());
        }
        Some((results, failed))
    }
}

/// What the step's calls did next, as [`Turn::execute_all`] waits on them.
enum Next<T> {
    /// The turn was cancelled.
    Cancelled,
    /// A call reported a preliminary result.
    Reported(Preliminary),
    /// Every call finished.
    Done(T),
}
