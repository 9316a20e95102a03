//! Answering the tool calls a suspended turn left waiting, and resuming it:
//! [`Conversation::approve`], [`approve_with`](Conversation::approve_with),
//! [`deny`](Conversation::deny), [`answer`](Conversation::answer) (checked against the call's
//! token or fingerprint), [`resume`](Conversation::resume), and
//! [`answer_and_continue`](Conversation::answer_and_continue), which resumes on the last answer.

use std::fmt;

use serde_json::Value;

use super::{Conversation, TurnStream};
use crate::engine::{TakenLease, TurnRequest};
use crate::hooks::TurnResult;
use crate::store::{self, CallAnswer, PendingKind, StoreError, SuspendedCall, TurnLease};
use crate::tool::ArgsError;

/// What [`Conversation::answer_and_continue`] did with an answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Continued {
    /// The answer is kept; this many calls of the suspended turn still wait for theirs.
    Waiting(usize),
    /// It was the last answer: the turn resumed, and ended with this result.
    Resumed(Box<TurnResult>),
}

/// Why an answer to a waiting tool call, or a resume, was refused. Nothing was written.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AnswerError {
    /// No call with this id waits in the session (it was never suspended, or its turn was
    /// resumed already).
    UnknownCall {
        /// The id given.
        call_id: String,
    },
    /// The call already has another answer (the same answer again is accepted, once).
    AlreadyAnswered {
        /// The call.
        call_id: String,
        /// The answer it has.
        answer: CallAnswer,
    },
    /// The arguments of `approve_with` do not fit the tool's arguments type.
    InvalidArguments {
        /// The call.
        call_id: String,
        /// What does not fit, and where.
        error: ArgsError,
    },
    /// The agent has an approval key: answers must come through [`Conversation::answer`]
    /// with the call's token.
    TokenRequired {
        /// The call.
        call_id: String,
    },
    /// The token (or, without an approval key, the fingerprint) given does not match the
    /// waiting call: the answer was forged, or made for another call or another suspension of
    /// this call id (a stale or replayed answer).
    BadToken {
        /// The call.
        call_id: String,
    },
    /// The answer does not fit what the call waits for: an approval for a call that waits
    /// for a result (a client or deferred call), or a result for one that waits for approval.
    WrongKind {
        /// The call.
        call_id: String,
        /// What it waits for.
        kind: PendingKind,
    },
    /// [`Conversation::resume`]: these calls still wait for an answer.
    Unanswered {
        /// Their ids, in the model's order.
        call_ids: Vec<String>,
    },
    /// [`Conversation::resume`]: the session has no suspended turn.
    NotSuspended,
    /// Asked for by a hook or tool of the session's own running turn: the answer takes the
    /// session's turn lock, and would wait for that turn, which waits for it, forever.
    InsideTurn {
        /// The session.
        session: String,
    },
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for AnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnswerError::UnknownCall { call_id } => write!(
                f,
                "no tool call `{call_id}` waits for an answer in this session"
            ),
            AnswerError::AlreadyAnswered { call_id, answer } => write!(
                f,
                "tool call `{call_id}` is already answered ({answer}); an answer cannot be changed"
            ),
            AnswerError::InvalidArguments { call_id, error } => write!(
                f,
                "the arguments given for tool call `{call_id}` do not fit: {error}; the call still \
                 waits for an answer"
            ),
            AnswerError::TokenRequired { call_id } => write!(
                f,
                "tool call `{call_id}` is sealed with a token: answer it with \
                 `Conversation::answer` and the token its `PendingCall` carries"
            ),
            AnswerError::BadToken { call_id } => write!(
                f,
                "the answer's token does not match waiting tool call `{call_id}`: it was forged, \
                 or made for another call or an earlier suspension of it; nothing was answered"
            ),
            AnswerError::WrongKind { call_id, kind } if kind.takes_result() => write!(
                f,
                "tool call `{call_id}` waits for a result (kind `{kind}`), not an approval: \
                 submit it with `submit_result`, or deny it"
            ),
            AnswerError::WrongKind { call_id, kind } => write!(
                f,
                "tool call `{call_id}` waits for approval (kind `{kind}`), not a result: \
                 approve or deny it"
            ),
            AnswerError::Unanswered { call_ids } => write!(
                f,
                "tool calls {} still wait for an answer: answer each before resuming",
                call_ids.join(", ")
            ),
            AnswerError::NotSuspended => f.write_str("the session has no suspended turn to resume"),
            AnswerError::InsideTurn { session } => write!(
                f,
                "an answer or resume of session `{session}` was asked for inside that session's \
                 running turn (by one of its hooks or tools), whose end it would wait for \
                 forever: give it once that turn has ended (from on_chat_response, or on a task \
                 of its own)"
            ),
            AnswerError::Store(error) => write!(f, "history store failed: {error}"),
        }
    }
}

impl std::error::Error for AnswerError {}

impl From<StoreError> for AnswerError {
    fn from(error: StoreError) -> Self {
        AnswerError::Store(error)
    }
}

impl Conversation {
    /// The tool calls of the session's suspended turn, in the model's order, each with its
    /// answer once given (empty when no turn is suspended). With an approval key, each call's
    /// token is the one this agent's key makes, which answers it: after the key changed while
    /// the turn was suspended, the tokens given out before no longer do, and these replace
    /// them.
    pub async fn waiting_calls(&self) -> Result<Vec<SuspendedCall>, StoreError> {
        let mut waiting = self.agent.inner.store.suspended(&self.session).await?;
        if let Some(key) = &self.agent.inner.approval_key {
            for suspended in &mut waiting {
                let token = store::call_token(key, &self.session, suspended.row, &suspended.call);
                suspended.call.token = Some(token);
            }
        }
        Ok(waiting)
    }

    /// Approves the waiting call `call_id`: it runs, with the arguments the model sent, when
    /// the turn resumes (its before_tool_call hooks run again first, so a hook's `Modify`
    /// applies again: [`PendingCall::modified_arguments`](crate::PendingCall::modified_arguments)
    /// shows its result). Returns how many calls of the turn still wait for an answer. The
    /// same answer given twice is one answer; another answer to an answered call is refused.
    ///
    /// With an approval key ([`AgentBuilder::approval_key`](crate::AgentBuilder::approval_key))
    /// it is refused ([`AnswerError::TokenRequired`]): answer with
    /// [`answer`](Self::answer) and the call's token. Answering takes the session's turn lock
    /// (as [`inject_message`](Conversation::inject_message) does): it waits for a running turn
    /// of the session, and is refused ([`AnswerError::InsideTurn`]) inside one of its hooks or
    /// tools.
    pub async fn approve(&self, call_id: &str) -> Result<usize, AnswerError> {
        self.answer(call_id, CallAnswer::Approve, None).await
    }

    /// Approves the waiting call `call_id` and, from now on, every call of its tool in this
    /// session (a standing approval, kept with the session until
    /// [`revoke_approval`](Self::revoke_approval)): the other calls of that tool waiting for
    /// approval in this turn are approved too, and later calls of it run without asking (the
    /// before_tool_call hooks still run, with
    /// [`ToolCallContext::approval`](crate::ToolCallContext::approval) set to
    /// [`CallAnswer::ApproveAlways`]). The tool is the agent's that made the call, and no
    /// other agent's tool of the same name: a handoff target's tool is kept as `agent/tool`
    /// (`billing/delete`), and a subagent's call
    /// ([`PendingCall::path`](crate::PendingCall::path) not empty) approves that subagent's
    /// tool for the rest of its turn. Returns how many calls still wait.
    pub async fn approve_always(&self, call_id: &str) -> Result<usize, AnswerError> {
        self.answer(call_id, CallAnswer::ApproveAlways, None).await
    }

    /// The tools this session approved for good ([`approve_always`](Self::approve_always)):
    /// the agent's own by name, a handoff target's as `agent/tool`.
    pub async fn approved_tools(&self) -> Result<Vec<String>, StoreError> {
        self.agent.inner.store.approved_tools(&self.session).await
    }

    /// Withdraws the standing approval of `tool` in this session (named as
    /// [`approved_tools`](Self::approved_tools) lists it: `delete`, or `billing/delete` for a
    /// handoff target's): its calls ask again. Returns whether it had one.
    pub async fn revoke_approval(&self, tool: &str) -> Result<bool, StoreError> {
        let lease = self.lock_session("revoke_approval").await?;
        let store = &self.agent.inner.store;
        let revoked = async {
            let mut tools = store.approved_tools(&self.session).await?;
            let had = tools.iter().any(|t| t == tool);
            if had {
                tools.retain(|t| t != tool);
                store.set_approved_tools(&self.session, tools).await?;
            }
            Ok(had)
        }
        .await;
        lease.release().await;
        revoked
    }

    /// Approves the waiting call `call_id` with these arguments instead of the model's,
    /// checked against the tool's arguments type now: arguments that do not fit are
    /// [`AnswerError::InvalidArguments`] and the call keeps waiting. (A tool a before_turn
    /// hook added is checked when the call runs; arguments that do not fit then are an error
    /// result the model reads.) Returns how many calls still wait.
    pub async fn approve_with(
        &self,
        call_id: &str,
        arguments: Value,
    ) -> Result<usize, AnswerError> {
        self.answer(call_id, CallAnswer::ApproveWith { arguments }, None)
            .await
    }

    /// Denies the waiting call `call_id`: it never runs, and the model reads
    /// "tool `x` was denied: REASON" as its result when the turn resumes. Returns how many
    /// calls still wait.
    pub async fn deny(
        &self,
        call_id: &str,
        reason: impl Into<String>,
    ) -> Result<usize, AnswerError> {
        let reason = reason.into();
        self.answer(call_id, CallAnswer::Deny { reason }, None)
            .await
    }

    /// Submits the result of the waiting client or deferred call `call_id` (the model reads
    /// a string as itself, anything else as JSON). Returns how many calls still wait. A call
    /// that waits for approval is [`AnswerError::WrongKind`].
    pub async fn submit_result(&self, call_id: &str, output: Value) -> Result<usize, AnswerError> {
        let answer = CallAnswer::Result {
            output,
            is_error: false,
        };
        self.answer(call_id, answer, None).await
    }

    /// Resumes the suspended turn once every waiting call has an answer: a turn with no new
    /// input (`continuation = true`) that first runs the approved calls (before_tool_call
    /// hooks again, with [`ToolCallContext::approval`](crate::ToolCallContext::approval) set;
    /// a hook that blocks now gives its reason as the result), stores every result, and lets
    /// the model go on. Refused, running nothing, while a call has no answer or when no turn
    /// is suspended.
    pub async fn resume(&self) -> Result<TurnResult, AnswerError> {
        self.resume_with(TurnRequest::default()).await
    }

    /// [`resume`](Self::resume) with this request's options (cancel token, run context, run
    /// hooks, limits); its input and messages are not used.
    pub async fn resume_with(
        &self,
        request: impl Into<TurnRequest>,
    ) -> Result<TurnResult, AnswerError> {
        let request = self.resuming(request.into()).await?;
        Ok(self.run(request).await)
    }

    /// [`resume_with`](Self::resume_with), yielding the resumed turn's events as
    /// [`stream`](Self::stream) does (the waiting calls' results first, as
    /// [`Chunk::ToolResult`](crate::Chunk::ToolResult)).
    pub async fn resume_stream(
        &self,
        request: impl Into<TurnRequest>,
    ) -> Result<TurnStream, AnswerError> {
        let request = self.resuming(request.into()).await?;
        Ok(self.stream(request))
    }

    /// Gives `answer` to the waiting call `call_id` (checked as [`answer`](Self::answer)
    /// checks it) and, when it was the last call without an answer, resumes the turn at once:
    /// `Ok(Continued::Waiting(n))` while `n` calls still wait (the answers given are kept),
    /// `Ok(Continued::Resumed(result))` with the resumed turn's result otherwise. The
    /// auto-continue form for a client that answers calls as they come (a client tool's
    /// result, an approval prompt).
    pub async fn answer_and_continue(
        &self,
        call_id: &str,
        answer: CallAnswer,
        check: Option<&str>,
    ) -> Result<Continued, AnswerError> {
        match self.answer(call_id, answer, check).await? {
            0 => Ok(Continued::Resumed(Box::new(self.resume().await?))),
            waiting => Ok(Continued::Waiting(waiting)),
        }
    }

    /// `request` as the turn that resumes the suspended one, holding the session's turn lock
    /// it was checked under (so a second resume waits, then finds nothing suspended); refused
    /// while a call has no answer or when no turn is suspended.
    async fn resuming(&self, request: TurnRequest) -> Result<TurnRequest, AnswerError> {
        let lease = self.lock().await?;
        match self.resumable(request).await {
            Ok(mut request) => {
                request.lease = TakenLease::new(lease);
                Ok(request)
            }
            Err(error) => {
                lease.release().await;
                Err(error)
            }
        }
    }

    /// `request` as the turn that resumes the suspended one, if one can be resumed.
    async fn resumable(&self, mut request: TurnRequest) -> Result<TurnRequest, AnswerError> {
        let waiting = self.waiting_calls().await?;
        if waiting.is_empty() {
            return Err(AnswerError::NotSuspended);
        }
        let call_ids: Vec<String> = waiting
            .iter()
            .filter(|w| w.answer.is_none())
            .map(|w| w.call.id.clone())
            .collect();
        if !call_ids.is_empty() {
            return Err(AnswerError::Unanswered { call_ids });
        }
        request.input.clear();
        request.messages.clear();
        request.continuation = true;
        request.resume = true;
        Ok(request)
    }

    /// Gives `answer` to the waiting call `call_id`, checked against `check`: the call's
    /// [`token`](crate::PendingCall::token) when the agent has an approval key (then required),
    /// else, when given, its [`fingerprint`](crate::PendingCall::fingerprint). A check that
    /// does not match is [`AnswerError::BadToken`]. This is what
    /// [`approve`](Self::approve), [`approve_with`](Self::approve_with) and [`deny`](Self::deny)
    /// do without a check; it returns the same.
    pub async fn answer(
        &self,
        call_id: &str,
        answer: CallAnswer,
        check: Option<&str>,
    ) -> Result<usize, AnswerError> {
        let lease = self.lock().await?;
        let answered = self.answer_locked(call_id, answer, check).await;
        lease.release().await;
        answered
    }

    async fn answer_locked(
        &self,
        call_id: &str,
        answer: CallAnswer,
        check: Option<&str>,
    ) -> Result<usize, AnswerError> {
        let store = &self.agent.inner.store;
        let mut waiting = store.suspended(&self.session).await?;
        let at = self.pick(&waiting, call_id, check, &answer)?;
        let call = &mut waiting[at];
        let fits = match &answer {
            CallAnswer::Result { .. } => call.call.kind.takes_result(),
            CallAnswer::Deny { .. } => true,
            _ => !call.call.kind.takes_result(),
        };
        if !fits {
            let (call_id, kind) = (call_id.to_owned(), call.call.kind);
            return Err(AnswerError::WrongKind { call_id, kind });
        }
        match &call.answer {
            Some(given) if *given == answer => {}
            Some(given) => {
                return Err(AnswerError::AlreadyAnswered {
                    call_id: call_id.to_owned(),
                    answer: given.clone(),
                });
            }
            None => {
                // A subagent's call is checked when it runs (its tools are the subagent's).
                if let CallAnswer::ApproveWith { arguments } = &answer
                    && call.via.is_none()
                {
                    self.check_arguments(&call.call.tool, arguments)
                        .map_err(|error| AnswerError::InvalidArguments {
                            call_id: call_id.to_owned(),
                            error,
                        })?;
                }
                if answer == CallAnswer::ApproveAlways {
                    let (tool, path) = (call.call.tool.clone(), call.call.path.clone());
                    let agent = call.agent.clone();
                    self.approve_for_good(&tool, &path, &agent, &mut waiting)
                        .await?;
                } else {
                    call.answer = Some(answer);
                }
                store.set_suspended(&self.session, waiting.clone()).await?;
            }
        }
        Ok(waiting.iter().filter(|w| w.answer.is_none()).count())
    }

    /// The waiting call `call_id` names, checked against `check`. A step may hold two waiting
    /// calls with one id (providers number calls `call_0` per reply, a model may repeat one):
    /// the one the token or fingerprint names, else the first not answered yet, else the first
    /// answered alike (a repeated answer is idempotent), else the first.
    fn pick(
        &self,
        waiting: &[SuspendedCall],
        call_id: &str,
        check: Option<&str>,
        answer: &CallAnswer,
    ) -> Result<usize, AnswerError> {
        let named = || (0..waiting.len()).filter(|&at| waiting[at].call.id == call_id);
        let Some(first) = named().next() else {
            let call_id = call_id.to_owned();
            return Err(AnswerError::UnknownCall { call_id });
        };
        let verified: Vec<usize> = named()
            .filter(|&at| self.verify(&waiting[at], check).is_ok())
            .collect();
        let Some(&first_verified) = verified.first() else {
            // None passes: the first one's error says why.
            return self.verify(&waiting[first], check).map(|()| first);
        };
        let open = verified.iter().find(|&&at| waiting[at].answer.is_none());
        let alike = || {
            verified
                .iter()
                .find(|&&at| waiting[at].answer.as_ref() == Some(answer))
        };
        Ok(open.or_else(alike).copied().unwrap_or(first_verified))
    }

    /// Keeps `tool` of the agent that made the call (`agent`, this one or a handoff's target;
    /// `path`: the subagents the call waits in, if any) approved for good, and approves its
    /// calls of `waiting` that wait for approval without an answer. Another agent's tool is
    /// another tool, even under the same name: a handoff target's is kept as `agent/tool`
    /// ([`store::standing_name`]), and a subagent's is approved for good in the subagent's
    /// turn, which the answer reaches when it resumes (`engine/subagent.rs`), not in this
    /// session.
    async fn approve_for_good(
        &self,
        tool: &str,
        path: &[String],
        agent: &str,
        waiting: &mut [SuspendedCall],
    ) -> Result<(), StoreError> {
        if path.is_empty() {
            let store = &self.agent.inner.store;
            let kept = store::standing_name(&self.agent.inner.name, agent, tool);
            let mut tools = store.approved_tools(&self.session).await?;
            if !tools.contains(&kept) {
                tools.push(kept);
                store.set_approved_tools(&self.session, tools).await?;
            }
        }
        for w in waiting.iter_mut() {
            if w.call.tool == tool
                && w.call.path == path
                && w.agent == agent
                && w.answer.is_none()
                && !w.call.kind.takes_result()
            {
                w.answer = Some(CallAnswer::ApproveAlways);
            }
        }
        Ok(())
    }

    /// Checks an answer's token (with an approval key) or fingerprint against the waiting
    /// call it answers.
    fn verify(&self, waiting: &SuspendedCall, check: Option<&str>) -> Result<(), AnswerError> {
        let call = &waiting.call;
        let call_id = call.id.clone();
        let expected = match (&self.agent.inner.approval_key, check) {
            (Some(_), None) => return Err(AnswerError::TokenRequired { call_id }),
            (None, None) => return Ok(()),
            (Some(key), Some(_)) => store::call_token(key, &self.session, waiting.row, call),
            (None, Some(_)) => call.fingerprint.clone(),
        };
        match check {
            Some(given) if store::same_token(given, &expected) => Ok(()),
            _ => Err(AnswerError::BadToken { call_id }),
        }
    }

    /// Checks edited arguments against the agent's tool of that name (a tool added at run
    /// time is checked when the call runs).
    fn check_arguments(&self, tool: &str, arguments: &Value) -> Result<(), ArgsError> {
        let inner = &self.agent.inner;
        match inner.tool_index.get(tool).and_then(|&i| inner.tools.get(i)) {
            Some(slot) => slot.tool.args_from_json(arguments.clone()).map(drop),
            None => Ok(()),
        }
    }

    /// The session's turn lock for an answer or a resume, waiting for a running turn;
    /// [`AnswerError::InsideTurn`] at once inside the session's own running turn.
    async fn lock(&self) -> Result<TurnLease, AnswerError> {
        if self.inside_own_turn() {
            let session = self.session.to_string();
            return Err(AnswerError::InsideTurn { session });
        }
        Ok(self.lock_session("answering a waiting call").await?)
    }
}
