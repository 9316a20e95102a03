//! Typed output in the turn: how each step asks for the answer (native schema, final-answer
//! tool or prompt), parsing and validating what the model answered, and sending it back to fix
//! an answer that failed until the output retries run out.

use std::sync::Arc;

use serde_json::Value;

use super::events::TurnEvent;
use super::output_spec::{Asked, OutputSpec};
use super::plan::TurnPlan;
use super::reply::Reply;
use super::state::{AnswerRow, End, Flow, Turn};
use super::tool_call::CallResult;
use crate::hooks::output::ValidateScope;
use crate::hooks::{
    ErrorStage, Output, OutputCheck, OutputFailure, StopReason, ToolOutcomeKind, ToolResultRecord,
    TurnError, TurnErrorKind,
};
use crate::message::{Message, ToolCall};
use crate::store::{MessageStatus, MessageUpdate};
use crate::text::Text;

/// What the output guardrails check of a reply with tool calls: the arguments of its
/// final-answer call, when the turn asks for the answer by tool (a reply without tool calls is
/// checked as its text).
pub(super) fn answer_arguments<'r>(
    spec: Option<&OutputSpec>,
    plan: &TurnPlan<'_>,
    calls: &'r [ToolCall],
) -> Option<&'r str> {
    let spec = spec.filter(|_| plan.asked == Some(Asked::Tool))?;
    let call = calls.iter().find(|call| spec.answers(&call.name))?;
    Some(&call.arguments)
}

/// What a step's reply did about the typed answer.
pub(super) enum Verdict {
    /// It gave no answer (it called other tools): the turn goes on.
    None,
    /// The answer parsed and passed the validators.
    Accepted(Output),
    /// The answer failed, for this reason; `by_tool` when the model reads it as the
    /// final-answer call's error result. `row`: the reply's row, when it was stored (an empty
    /// reply's is deleted).
    Failed {
        reason: String,
        by_tool: bool,
        row: Option<i64>,
    },
}

impl<'a> Turn<'a> {
    /// Parses and validates the step's answer, when the agent has an output type and the
    /// reply gives one; a final-answer call's result is set on the plan for the call to take.
    /// `Err` when a validator failed closed.
    pub(super) async fn check_output(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        reply: &Reply,
    ) -> Flow<Verdict> {
        plan.output_answers.clear();
        let (Some(spec), Some(asked)) = (self.current.output.as_deref(), plan.asked) else {
            return Ok(Verdict::None);
        };
        let by_tool = asked == Asked::Tool;
        let answered = match (by_tool, reply.tool_calls.is_empty()) {
            (true, true) => {
                // The text is the answer the model gave, though not where it was asked for.
                self.outcome.attempts.read(&reply.text);
                Err(format!(
                    "the answer was text: give it by calling {}",
                    spec.tool_names()
                ))
            }
            (true, false) => {
                let mut finals = reply
                    .tool_calls
                    .iter()
                    .enumerate()
                    .filter(|(_, call)| spec.answers(&call.name));
                let Some((position, call)) = finals.next() else {
                    return Ok(Verdict::None);
                };
                for (other, call) in finals {
                    let why = format!("only one `{}` call per step is read", call.name);
                    plan.output_answers
                        .push((other, answer(call, why.into(), false)));
                }
                let raw = self.outcome.attempts.read(&call.arguments);
                let parsed = from_tool(spec, call, raw);
                let verdict = self.validate(spec, step, parsed).await?;
                let (content, accepted) = match &verdict {
                    Ok(_) => (Text::from_static("The final answer was accepted."), true),
                    Err(reason) => (
                        format!(
                            "{reason}\nCall `{}` again with a corrected answer.",
                            call.name
                        )
                        .into(),
                        false,
                    ),
                };
                plan.output_answers
                    .push((position, answer(call, content, accepted)));
                if accepted {
                    // The answer ends the turn: a transfer beside it is not taken, and its
                    // result says so rather than that it was.
                    for (other, call) in reply.tool_calls.iter().enumerate() {
                        if let Some(index) = plan.tools.handoff(&call.name) {
                            let to = &plan.tools.agent.handoffs[index].to;
                            let why = format!(
                                "The transfer to agent `{to}` was not taken: the final answer \
                                 ended the turn."
                            );
                            plan.output_answers
                                .push((other, answer(call, why.into(), false)));
                        }
                    }
                }
                return Ok(match verdict {
                    Ok(output) => Verdict::Accepted(output),
                    Err(reason) => Verdict::Failed {
                        reason,
                        by_tool,
                        row: Some(reply.row),
                    },
                });
            }
            (false, true) => {
                let raw = self.outcome.attempts.read(&reply.text);
                from_text(&raw).map(|body| within(&raw, body))
            }
            (false, false) => return Ok(Verdict::None),
        };
        let parsed = answered.and_then(|text| (spec.kind.parse_text)(text, "the answer is"));
        // The reply is the answer in question from here: a turn that ends before it is taken
        // (a validator failing closed, a cancel while one runs) leaves its row marked not
        // accepted (`settle.rs`), so it is never read back as the session's answer.
        let row = (!reply.text.is_empty()).then_some(reply.row);
        self.open.answer = row.map(AnswerRow::Text);
        Ok(match self.validate(spec, step, parsed).await? {
            Ok(output) => Verdict::Accepted(output),
            Err(reason) => {
                // Sent back (or failing the turn) by `settle_output`, which marks its row.
                self.open.answer = None;
                Verdict::Failed {
                    reason,
                    by_tool: false,
                    row,
                }
            }
        })
    }

    /// Runs the validators on a parsed answer, in order, until one sends it back.
    async fn validate(
        &self,
        spec: &OutputSpec,
        step: usize,
        parsed: Result<Output, String>,
    ) -> Flow<Result<Output, String>> {
        let output = match parsed {
            Ok(output) => output,
            Err(reason) => return Ok(Err(reason)),
        };
        let scope = ValidateScope {
            agent: &self.me,
            request_id: &self.request_id,
            step,
            attempt: self.outcome.attempts.reasons.len(),
        };
        for validator in &spec.validators {
            match validator.check(&scope, &output).await {
                Ok(OutputCheck::Accept) => {}
                Ok(OutputCheck::Retry(message)) => return Ok(Err(message)),
                Err(error) => return Err(End::Failed(error, ErrorStage::Turn)),
            }
        }
        Ok(Ok(output))
    }

    /// What the step's verdict makes of the turn once the step is recorded (`next`): an
    /// accepted answer completes it; a failed one is sent back (as the final-answer call's
    /// error result, or a user message), traced as a retry, while retries remain, else fails
    /// the turn.
    pub(super) async fn settle_output(
        &mut self,
        plan: &mut TurnPlan<'_>,
        step: usize,
        verdict: Verdict,
        next: Flow<Option<usize>>,
    ) -> Flow<Option<usize>> {
        let ended = |next: &Flow<Option<usize>>| matches!(next, Err(end) if !matches!(end, End::Completed(StopReason::Finished)));
        match verdict {
            Verdict::None => next,
            _ if ended(&next) => next,
            Verdict::Accepted(output) => {
                // A text answer that was the reply's whole text is the turn's text already.
                if self.outcome.text != *output.text {
                    self.outcome.text = Text::from(&*output.text);
                }
                if let Some(last) = &mut self.outcome.attempts.last {
                    last.validated = true;
                }
                if self.sink.is_some() {
                    let output = output.clone();
                    self.emit(TurnEvent::Output { step, output }).await;
                }
                self.outcome.output = Some(output);
                Err(End::Completed(StopReason::Finished))
            }
            Verdict::Failed {
                reason,
                by_tool,
                row,
            } => {
                self.outcome.attempts.reasons.push(reason.clone());
                let retries = plan
                    .output_retries
                    .unwrap_or_else(|| self.current.output.as_ref().map_or(0, |spec| spec.retries));
                let attempts = &self.outcome.attempts;
                // In the step limit's last step, a failed answer is not sent back: no step
                // would read the retry, and its message would be left in the history for the
                // next turn. The step limit ends the turn (on_stop), the answer stored failed.
                if plan.last_step && attempts.reasons.len() <= retries {
                    if by_tool {
                        // Its error result is stored already, answering the call.
                        return next;
                    }
                    if let Some(row) = row {
                        self.update(row, failed_row()).await?;
                    }
                    return Ok(None);
                }
                if attempts.reasons.len() > retries {
                    let tries = attempts.reasons.len();
                    let message = format!(
                        "no valid answer after {tries} attempt{}: {}",
                        if tries == 1 { "" } else { "s" },
                        attempts.reasons.join("; ")
                    );
                    let failure = OutputFailure {
                        raw: attempts
                            .last
                            .as_ref()
                            .map(|last| last.raw.to_string())
                            .unwrap_or_default(),
                        reasons: attempts.reasons.clone(),
                    };
                    let error = TurnError::new(TurnErrorKind::Output(failure), message);
                    if let (false, Some(row)) = (by_tool, row) {
                        // A text answer that ends the turn is stored failed, so the rows tell
                        // every accepted answer apart (`stored_output.rs`); a final-answer
                        // call's error result marks it already.
                        self.update(row, failed_row()).await?;
                    }
                    return Err(End::Failed(error, ErrorStage::Turn));
                }
                let attempt = attempts.reasons.len();
                tracing::info!(
                    gen_ai.agent.name = %self.current.name,
                    gen_ai.agent.step = step,
                    attempt,
                    "output retry: {reason}"
                );
                if self.sink.is_some() {
                    let reason = reason.clone();
                    let retry = TurnEvent::OutputRetry {
                        step,
                        attempt,
                        reason,
                    };
                    self.emit(retry).await;
                }
                if by_tool {
                    return next;
                }
                let retry = Message::user(format!("{RETRY_LEAD}{reason}{RETRY_TAIL}"));
                let retry = self.add(retry).await?;
                plan.push_history(retry);
                Ok(None)
            }
        }
    }
}

/// The update that marks a failed text answer's row failed, so the rows tell every accepted
/// answer apart (`stored_output.rs`).
fn failed_row() -> MessageUpdate {
    MessageUpdate {
        message: None,
        status: Some(MessageStatus::Failed),
        response_completed_at: None,
        silent: None,
    }
}

/// The user message that sends a failed text answer back: this, the reason, then
/// [`RETRY_TAIL`] (`stored_output.rs` recognizes it in the rows).
pub(super) const RETRY_LEAD: &str = "Your answer was not accepted: ";
/// The end of the message that sends a failed text answer back.
pub(super) const RETRY_TAIL: &str = "\nAnswer again, correcting it.";

/// The final-answer call's result, as the model reads it.
fn answer(call: &ToolCall, content: Text, accepted: bool) -> ToolResultRecord {
    ToolResultRecord {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error: !accepted,
        outcome: if accepted {
            ToolOutcomeKind::Executed
        } else {
            ToolOutcomeKind::Rejected
        },
        duration: std::time::Duration::ZERO,
    }
}

/// A final-answer call of the step at `position`, answered by [`Turn::check_output`]: no tool
/// runs for it.
pub(super) fn answered(plan: &TurnPlan<'_>, position: usize) -> Option<CallResult> {
    let (_, record) = plan.output_answers.iter().find(|(at, _)| *at == position)?;
    Some(CallResult {
        record: record.clone(),
        error: None,
        dropped: false,
        handoff: None,
        pending: Vec::new(),
        via: None,
    })
}

/// Whether the step's call at `position` is the final-answer call that validated.
pub(super) fn accepted(plan: &TurnPlan<'_>, position: usize) -> bool {
    plan.output_answers
        .iter()
        .any(|(at, record)| *at == position && !record.is_error)
}

/// The answer in a final-answer call's arguments (`raw`, their text; a variant's put back in
/// the enum's JSON). Arguments that are the answer itself are parsed straight from their text,
/// which the output keeps; those holding it under `response`, or lacking a variant's tag, go
/// through a JSON value, and the output's text is the value written.
pub(super) fn from_tool(
    spec: &OutputSpec,
    call: &ToolCall,
    raw: Arc<str>,
) -> Result<Output, String> {
    if let Some(variant) = spec.variants.iter().find(|v| v.tool.name == call.name) {
        return (spec.kind.parse)(&variant.rebuild(&raw)?);
    }
    if !spec.wrapped {
        let answer = within(&raw, raw.trim());
        return (spec.kind.parse_text)(answer, "the arguments are");
    }
    let args: Value = serde_json::from_str(&raw)
        .map_err(|error| format!("the arguments are not JSON: {error}"))?;
    let json = match args {
        Value::Object(mut map) => map
            .remove("response")
            .ok_or_else(|| "the arguments lack `response`".to_owned())?,
        _ => return Err("the arguments are not an object with `response`".to_owned()),
    };
    (spec.kind.parse)(&json)
}

/// `part`, a slice of `whole`, as a string of its own: `whole` itself, shared, when it is all
/// of it.
fn within(whole: &Arc<str>, part: &str) -> Arc<str> {
    match part.len() == whole.len() {
        true => whole.clone(),
        false => Arc::from(part),
    }
}

/// The JSON answer's text in a reply's text: the whole text, or its fenced ```` ```json ````
/// block's body (the info string in any case, as [`fenced`] reads it), trimmed (for
/// `OutputKind::parse_text`, which keeps it as the turn's text).
pub(super) fn from_text(text: &str) -> Result<&str, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|inner| match inner.get(..4) {
            Some(info) if info.eq_ignore_ascii_case("json") => &inner[4..],
            _ => inner,
        })
        .map(str::trim)
        .or_else(|| fenced(trimmed))
        .unwrap_or(trimmed);
    if body.is_empty() {
        return Err("the answer was empty: answer with JSON".to_owned());
    }
    Ok(body)
}

/// The body of a text's one fenced block (```` ```json ````, in any case, or a bare fence),
/// trimmed, when the text is not JSON itself: a model often writes a sentence before or after
/// the block. `None` without a fence, or with several (which one is meant is unknown).
fn fenced(text: &str) -> Option<&str> {
    if text.starts_with(['{', '[', '"']) {
        return None;
    }
    let opened = &text[text.find("```")? + 3..];
    let (info, rest) = opened.split_once('\n')?;
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return None;
    }
    let end = rest.find("```")?;
    if rest[end + 3..].contains("```") {
        return None;
    }
    Some(rest[..end].trim())
}
