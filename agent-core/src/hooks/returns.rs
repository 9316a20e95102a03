//! Which return types fit which event: `#[hook]` relies on these impls, so a return type that
//! does not fit is a compile error on the hook's signature.

use std::fmt::Display;

use super::event::*;
use super::{Event, HookError};
use crate::hooks::{
    ChatErrorClassification, HandoffDecision, HistoryDecision, StepConfig, StopDecision,
    ToolCallDecision, ToolResultDecision, TurnConfig, TurnError,
};
use crate::message::Message;
use crate::store::{MessageUpdate, NewMessage, StoredMessage};
use crate::tool::ToolInput;

/// A value a hook of event `E` may return.
///
/// `()` fits every event (it means "no change"); `Result<T, E>` with a `Display` error fits
/// wherever `T` does, and its error is the hook's failure.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a valid return type for a `{E}` hook",
    label = "this return type does not fit the hook's event",
    note = "see the hook table in agent_core's docs for what each event may return"
)]
pub trait HookReturn<E: Event> {
    /// Normalises the return value.
    fn into_hook_result(self) -> Result<E::Out, HookError>;
}

impl<E: Event> HookReturn<E> for ()
where
    E::Out: Default,
{
    fn into_hook_result(self) -> Result<E::Out, HookError> {
        Ok(E::Out::default())
    }
}

impl<E: Event, T: HookReturn<E>, Er: Display> HookReturn<E> for Result<T, Er> {
    fn into_hook_result(self) -> Result<E::Out, HookError> {
        match self {
            Ok(value) => value.into_hook_result(),
            Err(error) => Err(HookError(error.to_string())),
        }
    }
}

macro_rules! returns {
    ($($event:ty: $value:ty => |$v:ident| $out:expr;)*) => {$(
        impl HookReturn<$event> for $value {
            fn into_hook_result(self) -> Result<<$event as Event>::Out, HookError> {
                let $v = self;
                Ok($out)
            }
        }
    )*};
}

returns! {
    BeforeTurn: TurnConfig => |v| Some(v);
    BeforeTurn: Option<TurnConfig> => |v| v;
    BeforeStep: StepConfig => |v| Some(v);
    BeforeStep: Option<StepConfig> => |v| v;
    OnStop: StopDecision => |v| v;
    OnStop: Option<StopDecision> => |v| v.unwrap_or_default();
    OnChatError: TurnError => |v| Some(v);
    OnChatError: Option<TurnError> => |v| v;
    ClassifyChatError: ChatErrorClassification => |v| Some(v);
    ClassifyChatError: Option<ChatErrorClassification> => |v| v;
    FilterMessages: Vec<StoredMessage> => |v| Some(v);
    FilterMessages: Option<Vec<StoredMessage>> => |v| v;
    PrefilterLlmHistory: HistoryDecision => |v| v;
    PrefilterLlmHistory: Option<HistoryDecision> => |v| v.unwrap_or_default();
    PostProcessMessage: Message => |v| Some(v);
    PostProcessMessage: Option<Message> => |v| v;
    BeforeCreateMessage: NewMessage => |v| Some(v);
    BeforeCreateMessage: Option<NewMessage> => |v| v;
    BeforeUpdateMessage: MessageUpdate => |v| Some(v);
    BeforeUpdateMessage: Option<MessageUpdate> => |v| v;
    AfterToolCallSuccess: ToolResultDecision => |v| v;
    AfterToolCallSuccess: Option<ToolResultDecision> => |v| v.unwrap_or_default();
    AfterToolCallFailure: ToolResultDecision => |v| v;
    AfterToolCallFailure: Option<ToolResultDecision> => |v| v.unwrap_or_default();
    BeforeStoreToolResult: Message => |v| Some(v);
    BeforeStoreToolResult: Option<Message> => |v| v;
    BeforeHandoff: HandoffDecision => |v| v;
    BeforeHandoff: Option<HandoffDecision> => |v| v.unwrap_or_default();
}

impl<I: ToolInput> HookReturn<BeforeToolCall<I>> for ToolCallDecision<I> {
    fn into_hook_result(self) -> Result<ToolCallDecision<I>, HookError> {
        Ok(self)
    }
}

impl<I: ToolInput> HookReturn<BeforeToolCall<I>> for Option<ToolCallDecision<I>> {
    fn into_hook_result(self) -> Result<ToolCallDecision<I>, HookError> {
        Ok(self.unwrap_or_default())
    }
}
