//! A suspended turn's way on: a session whose calls wait for an answer takes only a turn that
//! resumes it; that turn, after before_turn, runs the approved calls (before_tool_call again,
//! the tool, after_tool_call), stores every answered call's result after the results its step
//! stored, forgets the waiting calls, takes the handoff the suspended step made (if any), and
//! goes on with its steps.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::plan::TurnPlan;
use super::reach::Reach;
use super::runtime::AgentRuntime;
use super::state::{End, Flow, Turn, store_error};
use super::step::{CallsDone, stop_answer};
use super::subagent_call::Resume;
use super::tool_call::CallResult;
use crate::hooks::{ErrorStage, ToolOutcomeKind, ToolResultRecord, TurnError, TurnErrorKind};
use crate::message::{Message, ToolCall};
use crate::store::{self, CallAnswer, StoredMessage, SubagentTurn, SuspendedCall, units};
use crate::text::Text;
use serde_json::Value;

/// The waiting calls a resumed turn still has to answer: those without a result stored after
/// their assistant row (a resume cut off after storing one never runs that call again). Ids are
/// only unique within a step, and even there a model may repeat one: calls pair with results by
/// position among the calls sharing an id. When the step ran, each of its calls that did not
/// wait got a result, in the model's order; the results beyond those answer the waiting calls
/// with that id, in order (the resume stores them in the model's order).
pub(super) fn still_to_run(
    suspended: Vec<SuspendedCall>,
    rows: &[StoredMessage],
) -> Vec<SuspendedCall> {
    let Some(row) = suspended.first().map(|waiting| waiting.row) else {
        return suspended;
    };
    let mut after = rows.iter().skip_while(|stored| stored.id != row);
    let calls: &[ToolCall] = match after.next().map(|stored| &stored.message) {
        Some(Message::Assistant { tool_calls, .. }) => tool_calls,
        _ => &[],
    };
    let results: Vec<&str> = after
        .filter_map(|stored| match &stored.message {
            Message::Tool { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let count = |ids: &[&str], id: &str| ids.iter().filter(|x| **x == id).count();
    // A subagent's calls wait in one call of the step.
    let units = units(&suspended);
    let waiting: Vec<&str> = units.iter().map(|unit| unit[0].step_call_id()).collect();
    let called: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    // How many of each id's waiting calls were answered already, first ones first.
    let mut answered: HashMap<&str, usize> = waiting
        .iter()
        .map(|&id| {
            let ran = count(&called, id).saturating_sub(count(&waiting, id));
            (id, count(&results, id).saturating_sub(ran))
        })
        .collect();
    let mut left = Vec::with_capacity(suspended.len());
    for unit in units {
        match answered.get_mut(unit[0].step_call_id()) {
            Some(done) if *done > 0 => *done -= 1,
            _ => left.extend_from_slice(unit),
        }
    }
    left
}

/// The call a resumed turn runs for an approved waiting call: the arguments the model sent,
/// or the ones the approval gave instead.
fn approved_call(waiting: &SuspendedCall, answer: &CallAnswer) -> ToolCall {
    let arguments = match answer {
        CallAnswer::ApproveWith { arguments } => arguments,
        _ => &waiting.call.arguments,
    };
    ToolCall {
        id: waiting.call.id.as_str().into(),
        name: waiting.call.tool.as_str().into(),
        arguments: arguments.to_string().into(),
        metadata: None,
    }
}

/// What a resumed turn does with one waiting call.
enum Answer<'w> {
    /// Run it (again, for an idempotent tool whose run was interrupted).
    Run(&'w CallAnswer),
    /// Answer it with the reason it was denied.
    Deny(&'w str),
    /// Answer it with the result submitted for it (a client or deferred call).
    Submitted(&'w Value, bool),
    /// Report that its approved run was interrupted.
    Interrupted,
    /// Run the call to the subagent whose suspended turn holds these calls, resuming that
    /// turn with their answers.
    Subagent(&'w SubagentTurn, Vec<CallAnswer>),
}

/// The result of a call the resumed turn answers without running it (no tool-call hook runs):
/// denied (the model reads the reason), given its submitted result, or interrupted mid-run.
fn unrun(waiting: &SuspendedCall, answer: &Answer<'_>) -> CallResult {
    let tool = &waiting.call.tool;
    let (content, is_error, outcome) = match answer {
        Answer::Deny(reason) => (
            format!("tool `{tool}` was denied: {reason}"),
            false,
            ToolOutcomeKind::Blocked,
        ),
        Answer::Submitted(output, is_error) => {
            let content = match output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let outcome = if *is_error {
                ToolOutcomeKind::Failed
            } else {
                ToolOutcomeKind::Executed
            };
            (content, *is_error, outcome)
        }
        _ => (
            format!(
                "tool `{tool}` was interrupted: it started after its approval and its process \
                 stopped before it finished; it may have taken effect, and was not run again"
            ),
            true,
            ToolOutcomeKind::Interrupted,
        ),
    };
    let record = ToolResultRecord {
        call_id: waiting.call.id.as_str().into(),
        name: tool.as_str().into(),
        content: content.into(),
        is_error,
        outcome,
        duration: Duration::ZERO,
    };
    CallResult {
        record,
        error: None,
        dropped: false,
        handoff: None,
        pending: Vec::new(),
        via: None,
    }
}

impl<'a> Turn<'a> {
    /// A session with calls waiting for an answer takes only a turn that resumes it, and a
    /// turn resumes only such a session.
    pub(super) fn check_suspension(&self, suspended: &[SuspendedCall], resume: bool) -> Flow {
        let why = match (suspended.is_empty(), resume) {
            (false, false) => {
                let ids: Vec<&str> = suspended.iter().map(|w| w.call.id.as_str()).collect();
                format!(
                    "session `{}` is suspended: tool calls {} wait for an answer; answer each \
                     (approve, approve_with, deny, submit_result) and resume the turn",
                    self.session_id,
                    ids.join(", ")
                )
            }
            (true, true) => format!(
                "session `{}` has no suspended turn to resume",
                self.session_id
            ),
            _ => return Ok(()),
        };
        Err(End::turn(TurnError::new(TurnErrorKind::Suspended, why)))
    }

    /// A resumed turn's waiting calls, once every one has an answer: the approved ones run
    /// (concurrently, gates first), the denied ones get their reason, and every result is
    /// stored in the model's order before the waiting calls are forgotten. A call without an
    /// answer suspends the turn again, running nothing; an approved call a gate defers when
    /// it runs waits again (the turn suspends once the other results are stored). A turn
    /// cancelled (or a process stopped) while approved calls run leaves them waiting, with
    /// their execution records: the next resume never runs a call whose result was stored,
    /// and reports one that started without a result as interrupted (or runs it again when
    /// its tool is idempotent).
    pub(super) async fn resume(&mut self, plan: &mut TurnPlan<'a>) -> Flow {
        let Some(waiting) = self.session.resume.take() else {
            return Ok(());
        };
        let answered: Option<Vec<&CallAnswer>> =
            waiting.iter().map(|w| w.answer.as_ref()).collect();
        let Some(answered) = answered else {
            let unanswered = waiting.iter().filter(|w| w.answer.is_none());
            self.outcome.pending = unanswered.map(|w| w.call.clone()).collect();
            return Err(End::Suspended);
        };
        let mut done = CallsDone {
            results: Vec::with_capacity(waiting.len()),
            failed_hook: None,
            handoff: None,
        };
        let mut again = Vec::new();
        let handoff = waiting.first().and_then(|w| w.handoff.clone());
        let kept_stop = waiting.first().and_then(|w| w.stop.clone());
        if let Some(first) = waiting.first() {
            self.hand_back(plan, &first.agent).await;
            let (row, step) = (first.row, first.step);
            let (results, failed) = self.answer_all(plan, &waiting, &answered).await?;
            done.failed_hook = failed;
            again = self.wait_again(&waiting, &results).await?;
            let dropped = self.store_results(plan, step, results, &mut done).await?;
            self.drop_resumed(plan, row, &waiting, &dropped).await?;
        }
        self.outcome.resumed = std::mem::take(&mut done.results);
        // A stop tool's answer, given before the step suspended or now: the turn's answer once
        // the step's calls are all answered.
        let stops = &self.current.stop_at_tools;
        let stop = match kept_stop {
            Some(answer) => Some(answer.into()),
            None if stops.is_empty() => None,
            None => stop_answer(stops, &self.outcome.resumed),
        };
        if let Some(first) = again.first_mut() {
            first.stop = stop.as_ref().map(Text::to_string);
        }
        self.keep_waiting(again.clone()).await?;
        if let Some(error) = done.failed_hook {
            return Err(End::turn(error));
        }
        if !again.is_empty() {
            self.outcome.pending = again.into_iter().map(|w| w.call).collect();
            return Err(End::Suspended);
        }
        // The handoff the suspended step made, taken now that its calls are answered.
        let target = handoff.and_then(|to| {
            let slots = &self.current.handoffs;
            slots.iter().position(|slot| *slot.to == *to)
        });
        if let Some(index) = target {
            self.hand_off(plan, index).await;
        } else if let Some(answer) = stop {
            return Err(self.end_with_stop_answer(answer).await);
        }
        Ok(())
    }

    /// Keeps a stop tool's answer, given in a step that then suspended, with the step's waiting
    /// calls (on the first), for the resumed turn to end with.
    pub(super) async fn keep_stop(&mut self, answer: Text) -> Flow {
        let store = &self.agent.store;
        let read = store.suspended(self.session_id).await;
        let mut waiting =
            read.map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))?;
        if let Some(first) = waiting.first_mut() {
            first.stop = Some(answer.to_string());
            self.keep_waiting(waiting).await?;
        }
        Ok(())
    }

    /// The approved calls that wait again (a gate deferred them when they ran, or the subagent
    /// whose turn a call resumed suspended again), kept with the session before any result is
    /// stored, in place of their answered records. The calls that ran keep their execution
    /// records until their results are stored. `results` holds one result per call of the
    /// step ([`units`]).
    async fn wait_again(
        &mut self,
        waiting: &[SuspendedCall],
        results: &[CallResult],
    ) -> Flow<Vec<SuspendedCall>> {
        let (row, step) = waiting.first().map_or((0, 0), |w| (w.row, w.step));
        // They still wait for the step's handoff.
        let handoff = waiting.first().and_then(|w| w.handoff.clone());
        let (mut kept, mut again) = (Vec::new(), Vec::new());
        for (unit, result) in units(waiting).into_iter().zip(results) {
            if result.pending.is_empty() {
                kept.extend_from_slice(unit);
                continue;
            }
            let mut fresh = self.waiting_in(row, step, std::slice::from_ref(result));
            for call in &mut fresh {
                call.handoff.clone_from(&handoff);
            }
            kept.extend(fresh.iter().cloned());
            again.extend(fresh);
        }
        if again.is_empty() {
            return Ok(again);
        }
        self.keep_waiting(kept).await?;
        self.kept_waiting(results);
        Ok(again)
    }

    /// Hands the turn, along the handoffs from the agent asked, to the agent named `to` that
    /// made the waiting calls (a handoff's target), as the suspended turn had; nothing when
    /// it is the agent asked or no chain of handoffs reaches it (its calls are then unknown
    /// tools, answered with an error result).
    async fn hand_back(&mut self, plan: &mut TurnPlan<'a>, to: &str) {
        if to.is_empty() || *self.current.name == *to {
            return;
        }
        let reach: &'a Reach = self.reach;
        // Breadth first from the agent asked; handoffs may form cycles.
        let mut paths: Vec<(&AgentRuntime, Vec<usize>)> = vec![(self.current, Vec::new())];
        let mut seen: Vec<&AgentRuntime> = vec![self.current];
        let mut at = 0;
        while let Some((agent, path)) = paths.get(at).cloned() {
            at += 1;
            for (index, slot) in agent.handoffs.iter().enumerate() {
                let Some(target) = reach.target(slot) else {
                    continue;
                };
                if seen.iter().any(|agent| std::ptr::eq(*agent, target)) {
                    continue;
                }
                seen.push(target);
                let mut path = path.clone();
                path.push(index);
                if *target.name == *to {
                    for index in path {
                        self.hand_off(plan, index).await;
                    }
                    return;
                }
                paths.push((target, path));
            }
        }
    }

    /// Replaces the session's waiting calls (none: the session is no longer suspended).
    async fn keep_waiting(&self, waiting: Vec<SuspendedCall>) -> Flow {
        self.agent
            .store
            .set_suspended(self.session_id, waiting)
            .await
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))
    }

    /// One result per call of the step that waits ([`units`]), in order: the approved calls
    /// run (each one's execution record stored first), the denied are answered with their
    /// reason, a call whose approved run was interrupted is reported as such unless its tool
    /// is idempotent, and a call to a subagent whose turn suspended runs again, resuming that
    /// turn with its calls' answers (the subagent's store keeps their execution records). A
    /// fail-closed on_chunk hook failing on a preliminary result fails the turn once the
    /// results are stored.
    async fn answer_all(
        &mut self,
        plan: &TurnPlan<'_>,
        waiting: &[SuspendedCall],
        answered: &[&CallAnswer],
    ) -> Flow<(Vec<CallResult>, Option<TurnError>)> {
        let step = waiting.first().map_or(0, |w| w.step);
        let idempotent = |tool: &str| plan.tools.get(tool).is_some_and(|s| s.tool.idempotent());
        let units = units(waiting);
        let mut at = 0;
        let answers: Vec<Answer<'_>> = units
            .iter()
            .map(|unit| {
                let (w, given) = (&unit[0], &answered[at..at + unit.len()]);
                at += unit.len();
                match (&w.via, given[0]) {
                    (Some(via), _) => {
                        Answer::Subagent(via, given.iter().map(|&answer| answer.clone()).collect())
                    }
                    (None, CallAnswer::Deny { reason }) => Answer::Deny(reason),
                    (None, CallAnswer::Result { output, is_error }) => {
                        Answer::Submitted(output, *is_error)
                    }
                    _ if w.started_at.is_some() && !idempotent(&w.call.tool) => Answer::Interrupted,
                    (None, answer) => Answer::Run(answer),
                }
            })
            .collect();
        let mut calls = Vec::new();
        let mut approvals = Vec::new();
        let mut resumes = Vec::new();
        for (unit, answer) in units.iter().zip(&answers) {
            match answer {
                Answer::Run(answer) => {
                    calls.push(approved_call(&unit[0], answer));
                    approvals.push(Some((*answer).clone()));
                    resumes.push(None);
                }
                Answer::Subagent(via, answers) => {
                    calls.push(ToolCall {
                        id: via.call_id.as_str().into(),
                        name: via.tool.as_str().into(),
                        arguments: via.arguments.to_string().into(),
                        metadata: None,
                    });
                    approvals.push(None);
                    let session = via.session.clone();
                    let answers = answers.clone();
                    let hold = self.agent.store.take_hold(self.session_id, &session);
                    resumes.push(Some(Resume {
                        session,
                        answers,
                        hold,
                    }));
                }
                _ => {}
            }
        }
        if !calls.is_empty() {
            self.read_approved_tools().await?;
        }
        if answers
            .iter()
            .any(|answer| matches!(answer, Answer::Run(_)))
        {
            // The execution records, stored before any tool runs.
            let now = store::now_micros();
            let mut running = Vec::with_capacity(waiting.len());
            for (unit, answer) in units.iter().zip(&answers) {
                for w in unit.iter() {
                    let mut w = w.clone();
                    if matches!(answer, Answer::Run(_)) {
                        w.started_at = Some(now);
                    }
                    running.push(w);
                }
            }
            self.keep_waiting(running).await?;
        }
        let (ran, failed) = if calls.is_empty() {
            (Vec::new(), None)
        } else {
            let executed = self.execute_all(plan, step, &calls, &approvals, resumes);
            match executed.await {
                Some(ran) => ran,
                None => return Err(End::Aborted),
            }
        };
        let mut ran = ran.into_iter();
        let mut results = Vec::with_capacity(units.len());
        for (unit, answer) in units.iter().zip(&answers) {
            match answer {
                Answer::Run(_) | Answer::Subagent(..) => results.extend(ran.next()),
                unrun_answer => results.push(unrun(&unit[0], unrun_answer)),
            }
        }
        Ok((results, failed))
    }

    /// Takes the resumed calls a result hook dropped out of their assistant message.
    async fn drop_resumed(
        &mut self,
        plan: &mut TurnPlan<'_>,
        row: i64,
        waiting: &[SuspendedCall],
        dropped: &HashSet<usize>,
    ) -> Flow {
        if dropped.is_empty() {
            return Ok(());
        }
        let Some(at) = plan
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
        else {
            return Ok(());
        };
        let Message::Assistant { tool_calls, .. } = &plan.messages[at] else {
            return Ok(());
        };
        let units = units(waiting);
        let positions = dropped
            .iter()
            .filter_map(|&i| {
                let id = units.get(i)?[0].step_call_id();
                tool_calls.iter().position(|call| call.id == id)
            })
            .collect();
        // The assistant message is not among this turn's added messages.
        self.drop_calls(row, (usize::MAX, at), &positions, plan.history_mut())
            .await
    }
}
