//! Parsing `#[hook(...)]` options and the hook function's signature.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, LitStr, Path, ReturnType, Signature, Type};

use super::events::{self, EventInfo};
use crate::common::{
    ContextParam, closest, context_param, generic_args, int_option, parse_crate_value,
    unknown_option, wrong_context_message,
};
use crate::ctxt::Ctxt;

/// Which tools a tool-call hook applies to, as written.
pub(crate) enum MatcherSpec {
    /// `tool = "name"`.
    Tool(LitStr),
    /// `tools = ["a", "b"]`.
    Tools(Vec<LitStr>),
    /// `match = "regex"`, validated and compiled.
    Match(LitStr, regex_lite::Regex),
}

/// The options of `#[hook(...)]`.
#[derive(Default)]
pub(crate) struct HookAttr {
    pub(crate) event: Option<&'static EventInfo>,
    pub(crate) event_span: Option<Span>,
    /// The matcher and the span of its key.
    pub(crate) matcher: Option<(MatcherSpec, Span)>,
    pub(crate) dynamic: bool,
    pub(crate) dynamic_span: Option<Span>,
    pub(crate) priority: Option<i32>,
    pub(crate) on_error: Option<(bool, Span)>,
    pub(crate) timeout_ms: Option<u64>,
    /// The span of `timeout_ms`, where a sync hook's is reported.
    pub(crate) timeout_span: Option<Span>,
    pub(crate) crate_path: Option<Path>,
    /// Whether the options did not parse (reported): the hook is then left out, since what it
    /// matches is unknown, so that nothing generated for it (an input enum of the wrong tools)
    /// adds an error to that one.
    pub(crate) failed: bool,
}

/// Every `#[hook]` option after the event, for "did you mean" and "expected one of" messages.
const OPTIONS: &[&str] = &[
    "tool",
    "tools",
    "match",
    "dynamic",
    "priority",
    "on_error",
    "timeout_ms",
    "crate",
];

/// "a" or "an" before an event's name (`an on_chunk hook`, `a before_turn hook`).
fn article(event: &str) -> &'static str {
    if event.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn duplicate(meta: &syn::meta::ParseNestedMeta<'_>, key: &str) -> syn::Error {
    meta.error(format!("duplicate `{key}` option: give it once"))
}

/// Validates a regex with the `regex` crate's parser (so errors read like `regex`'s) and compiles
/// it for matching tool names at expansion time.
fn parse_regex(lit: &LitStr) -> syn::Result<regex_lite::Regex> {
    let pattern = lit.value();
    if let Err(error) = regex_syntax::Parser::new().parse(&pattern) {
        return Err(syn::Error::new(
            lit.span(),
            format!("invalid regex in `match`:\n{error}"),
        ));
    }
    regex_lite::Regex::new(&pattern).map_err(|error| {
        syn::Error::new(
            lit.span(),
            format!(
                "this regex uses a feature tool matchers do not support (Unicode classes): {error}"
            ),
        )
    })
}

impl HookAttr {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream, span: Span) -> HookAttr {
        let mut attr = HookAttr::default();
        let mut first = true;
        let parser = syn::meta::parser(|meta| {
            let is_first = std::mem::replace(&mut first, false);
            let key = meta
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            if is_first && (meta.input.is_empty() || meta.input.peek(syn::Token![,])) {
                let Some(event) = events::find(&key) else {
                    let suggestion = closest(&key, events::EVENTS.iter().map(|event| event.name));
                    return Err(meta.error(match suggestion {
                        Some(best) => format!("unknown hook event `{key}`; did you mean `{best}`?"),
                        None => format!(
                            "unknown hook event `{key}`; expected one of: {}",
                            events::names()
                        ),
                    }));
                };
                attr.event = Some(event);
                attr.event_span = Some(meta.path.span());
                return Ok(());
            }
            if is_first {
                return Err(meta.error(format!(
                    "`#[hook]` starts with the event, for example `#[hook(on_chunk)]`; events: {}",
                    events::names()
                )));
            }
            let key_span = meta.path.span();
            match key.as_str() {
                "tool" | "tools" | "match" => {
                    if attr.matcher.is_some() {
                        return Err(
                            meta.error("a hook takes one matcher: `tool`, `tools` or `match`")
                        );
                    }
                    let spec = match key.as_str() {
                        "tool" => MatcherSpec::Tool(meta.value()?.parse()?),
                        "tools" => {
                            let content;
                            let value = meta.value()?;
                            syn::bracketed!(content in value);
                            let names = content.parse_terminated(
                                <LitStr as syn::parse::Parse>::parse,
                                syn::Token![,],
                            )?;
                            if names.is_empty() {
                                return Err(meta.error("`tools` lists at least one tool name"));
                            }
                            let names: Vec<LitStr> = names.into_iter().collect();
                            for (at, name) in names.iter().enumerate() {
                                if names[..at]
                                    .iter()
                                    .any(|earlier| earlier.value() == name.value())
                                {
                                    return Err(syn::Error::new(
                                        name.span(),
                                        format!(
                                            "`{}` is listed twice in `tools`: list each tool once",
                                            name.value()
                                        ),
                                    ));
                                }
                            }
                            MatcherSpec::Tools(names)
                        }
                        _ => {
                            let lit: LitStr = meta.value()?.parse()?;
                            let regex = parse_regex(&lit)?;
                            MatcherSpec::Match(lit, regex)
                        }
                    };
                    attr.matcher = Some((spec, key_span));
                }
                "dynamic" => {
                    if attr.dynamic_span.is_some() {
                        return Err(duplicate(&meta, "dynamic"));
                    }
                    attr.dynamic_span = Some(key_span);
                    attr.dynamic = if meta.input.peek(syn::Token![=]) {
                        let value = meta.value()?;
                        if value.peek(LitStr) {
                            let lit: LitStr = value.parse()?;
                            let fix = match lit.value().as_str() {
                                "true" => "write `dynamic`",
                                "false" => "leave it out",
                                _ => "write `dynamic`, or leave it out",
                            };
                            return Err(syn::Error::new(
                                lit.span(),
                                format!("`dynamic` is a flag, not a string: {fix}"),
                            ));
                        }
                        value
                            .parse::<syn::LitBool>()
                            .map_err(|error| syn::Error::new(error.span(), "`dynamic` is a flag: write `dynamic`, or `dynamic = true` / `dynamic = false`"))?
                            .value
                    } else {
                        true
                    };
                }
                "priority" => {
                    if attr.priority.is_some() {
                        return Err(duplicate(&meta, "priority"));
                    }
                    let what = format!(
                        "`priority` takes a whole number from {} to {}, for example `priority = -10` (lower runs first)",
                        i32::MIN,
                        i32::MAX
                    );
                    let (_, priority) = int_option::<i32>(&meta, &what, &what)?;
                    attr.priority = Some(priority);
                }
                "on_error" => {
                    if attr.on_error.is_some() {
                        return Err(duplicate(&meta, "on_error"));
                    }
                    let lit: LitStr = meta.value()?.parse()?;
                    let fail_open = match lit.value().as_str() {
                        "fail_open" => true,
                        "fail_closed" => false,
                        other => {
                            return Err(syn::Error::new(
                                lit.span(),
                                format!(
                                    "unknown `on_error` policy `{other}`; expected `\"fail_open\"` or `\"fail_closed\"`"
                                ),
                            ));
                        }
                    };
                    attr.on_error = Some((fail_open, key_span));
                }
                "timeout_ms" => {
                    if attr.timeout_ms.is_some() {
                        return Err(duplicate(&meta, "timeout_ms"));
                    }
                    let (lit, ms) = int_option::<u64>(
                        &meta,
                        "`timeout_ms` takes a whole number of milliseconds, for example `timeout_ms = 250`",
                        &format!(
                            "`timeout_ms` takes a whole number of milliseconds from 1 to {}, for example `timeout_ms = 250`",
                            u64::MAX
                        ),
                    )?;
                    if ms == 0 {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`timeout_ms` must be at least 1",
                        ));
                    }
                    attr.timeout_ms = Some(ms);
                    attr.timeout_span = Some(key_span);
                }
                "crate" => {
                    if attr.crate_path.is_some() {
                        return Err(duplicate(&meta, "crate"));
                    }
                    attr.crate_path = Some(parse_crate_value(&meta)?);
                }
                _ => return Err(meta.error(unknown_option("hook", &key, OPTIONS))),
            }
            Ok(())
        });
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
            attr.failed = true;
            return attr;
        }
        match attr.event {
            None if first => cx.error_at(
                span,
                format!(
                    "`#[hook]` needs an event, for example `#[hook(on_chunk)]`; events: {}",
                    events::names()
                ),
            ),
            Some(event) if !event.tool => {
                if let Some((_, key_span)) = &attr.matcher {
                    cx.error_at(
                        *key_span,
                        format!("`{}` is not a tool-call event: matchers only apply to `before_tool_call` and `after_tool_call`", event.name),
                    );
                }
                if let Some(span) = attr.dynamic_span {
                    cx.error_at(span, "`dynamic` only applies to `before_tool_call` and `after_tool_call` matchers");
                }
            }
            _ => {}
        }
        attr
    }
}

/// A parsed hook function.
pub(crate) struct HookFn {
    pub(crate) attr: HookAttr,
    pub(crate) event: &'static EventInfo,
    pub(crate) ident: Ident,
    pub(crate) is_async: bool,
    pub(crate) has_receiver: bool,
    /// The borrowed context type (`ChunkContext` in `ctx: &ChunkContext`); for validate_output,
    /// the first borrowed parameter's type (the answer's or its context's).
    pub(crate) ctx_ty: Type,
    /// For tool events: the input type `I` and, for after_tool_call, the output type `O`.
    pub(crate) input_ty: Option<Type>,
    pub(crate) output_ty: Option<Type>,
    /// The declared return type (`None` for `()`).
    pub(crate) ret: Option<Type>,
    /// The agent's run context parameter (`context: &User` with `#[agent(context = User)]`).
    pub(crate) run_context: Option<RunContextParam>,
    /// For validate_output: the agent's output type and the hook's parameters.
    pub(crate) answer: Option<AnswerParams>,
}

/// A validate_output hook's parameters: the answer (`&T`), its context
/// (`&OutputContext<T>`) and the run context, each optional, in any order.
pub(crate) struct AnswerParams {
    /// The agent's output type (`output = T`).
    pub(crate) declared: Type,
    /// The parameters after `&self`, in order.
    pub(crate) params: Vec<AnswerParam>,
}

/// One parameter of a validate_output hook.
pub(crate) enum AnswerParam {
    /// The answer, borrowed as this type (checked to be the output type).
    Answer(Type),
    /// The hook context, borrowed as this type.
    Context(Type),
    /// The run context, borrowed as this type.
    RunContext(Type),
}

/// A hook's run context parameter.
pub(crate) struct RunContextParam {
    /// The agent's declared context type (what `run_context::<T>()` reads).
    pub(crate) declared: Type,
    /// Whether it comes before the event's context in the signature.
    pub(crate) first: bool,
    /// The parameter's type, where a mismatch with `declared` is reported.
    pub(crate) written: Type,
}

/// Parses a hook function's signature. `None` when it cannot be registered (errors are in `cx`).
pub(crate) fn parse_hook(
    cx: &Ctxt,
    attr: HookAttr,
    krate: Option<&Path>,
    context: Option<&Type>,
    output: Option<&Type>,
    sig: &Signature,
) -> Option<HookFn> {
    if let (Some(span), None) = (attr.timeout_span, &sig.asyncness) {
        // Reported, and the hook still registered (without a timeout): one error.
        cx.error_at(
            span,
            "`timeout_ms` applies to async hooks: a sync hook runs inline and cannot be stopped; make it an `async fn`, or remove `timeout_ms`",
        );
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        // Not registered: the engine would call it from safe code.
        cx.error_spanned_by(
            unsafety,
            "a hook function cannot be `unsafe`: the engine calls it on every event it matches; make it safe, with an `unsafe` block inside it for the unsafe code",
        );
        return None;
    }
    if attr.failed {
        return None;
    }
    let event = attr.event?;
    if !crate::common::lifetimes_only(&sig.generics) {
        cx.error_spanned_by(&sig.generics, "a hook function cannot be generic");
    }
    if let Some(receiver) = sig.receiver()
        && !crate::common::is_shared_receiver(receiver)
    {
        cx.error_spanned_by(
            receiver,
            "a hook method takes `&self` (agents are shared between concurrent turns)",
        );
    }
    let mut typed: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(typed) => Some(typed),
            FnArg::Receiver(_) => None,
        })
        .collect();
    // With `#[agent(context = T)]`, a `&T` parameter is the run context, beside the event's.
    let (mut run_context, mut run_context_at) = (None, None);
    if let Some(declared) = context
        && let Some(position) = typed.iter().position(|param| {
            matches!(
                context_param(&param.ty, Some(declared)),
                ContextParam::Context
            )
        })
    {
        let written = (*typed[position].ty).clone();
        typed.remove(position);
        run_context_at = Some(position);
        run_context = Some(RunContextParam {
            declared: declared.clone(),
            first: position == 0,
            written,
        });
    }
    if event.name == "validate_output" {
        let answer = answer_params(
            cx,
            &attr,
            krate,
            output,
            sig,
            &typed,
            run_context_at.zip(run_context.as_ref()),
        )?;
        let ctx_ty = answer.params.iter().find_map(|param| match param {
            AnswerParam::Answer(ty) | AnswerParam::Context(ty) => Some(ty.clone()),
            AnswerParam::RunContext(_) => None,
        })?;
        return Some(HookFn {
            event,
            ident: sig.ident.clone(),
            is_async: sig.asyncness.is_some(),
            has_receiver: sig.receiver().is_some(),
            ctx_ty,
            input_ty: None,
            output_ty: None,
            ret: return_type(sig),
            run_context,
            answer: Some(answer),
            attr,
        });
    }
    let expected = format!("`ctx: &{}`", event.context);
    let ctx = match typed.as_slice() {
        [] => {
            cx.error_spanned_by(
                &sig.ident,
                format!(
                    "{} `{}` hook takes its context: add a parameter {expected}",
                    article(event.name),
                    event.name
                ),
            );
            return None;
        }
        [ctx] => ctx,
        [first, extra, ..] => {
            // The run context of the wrong type, before or after the event's context (which
            // is itself a reference, so it is told apart by its name).
            let is_event_context = |param: &syn::PatType| match &*param.ty {
                Type::Reference(reference) => events::EVENTS.iter().any(|event| {
                    let base = event.context.split('<').next().unwrap_or(event.context);
                    crate::common::is_helper_type(&reference.elem, base, krate)
                }),
                _ => false,
            };
            let candidate = if typed.len() == 2 && is_event_context(extra) {
                first
            } else {
                extra
            };
            if let (Some(declared), ContextParam::WrongType(written)) =
                (context, context_param(&candidate.ty, context))
            {
                cx.error_spanned_by(written, wrong_context_message(declared, written));
                return None;
            }
            cx.error_spanned_by(
                extra,
                format!(
                    "{} `{}` hook takes one parameter, {expected}",
                    article(event.name),
                    event.name
                ),
            );
            return None;
        }
    };
    let ctx_ty = match &*ctx.ty {
        Type::Reference(reference) if reference.mutability.is_none() => (*reference.elem).clone(),
        other => {
            cx.error_spanned_by(
                other,
                format!("a hook borrows its context: expected {expected}"),
            );
            return None;
        }
    };
    // A context type of another event: one error here, rather than rustc's about the closure.
    let base = |context: &'static str| context.split('<').next().unwrap_or(context);
    let own = base(event.context);
    if let Some(other) = events::EVENTS.iter().find(|other| {
        !event.tool
            && base(other.context) != own
            && crate::common::is_helper_type(&ctx_ty, base(other.context), krate)
    }) {
        cx.error_spanned_by(
            &ctx_ty,
            format!(
                "{} `{}` hook receives `&{}`, and `{}` is the context of `{}`: write {expected}",
                article(event.name),
                event.name,
                event.context,
                base(other.context),
                other.name
            ),
        );
        return None;
    }
    let (mut input_ty, mut output_ty) = (None, None);
    if event.tool {
        let shape = if event.name == "before_tool_call" {
            "ToolCallContext"
        } else {
            "ToolCallResultContext"
        };
        let args = generic_args(&ctx_ty);
        let named = crate::common::is_helper_type(&ctx_ty, shape, krate);
        match (named, args.as_slice()) {
            (true, [input]) => input_ty = Some((*input).clone()),
            (true, [input, output]) if event.name == "after_tool_call" => {
                input_ty = Some((*input).clone());
                output_ty = Some((*output).clone());
            }
            _ => {
                cx.error_spanned_by(
                    &ctx_ty,
                    format!(
                        "a `{}` hook takes `&{}`: `I` is the matched tool's args type, the enum `#[agent]` generates for several tools, or `serde_json::Value`",
                        event.name, event.context
                    ),
                );
                return None;
            }
        }
    }
    Some(HookFn {
        event,
        ident: sig.ident.clone(),
        is_async: sig.asyncness.is_some(),
        has_receiver: sig.receiver().is_some(),
        ctx_ty,
        input_ty,
        output_ty,
        ret: return_type(sig),
        run_context,
        answer: None,
        attr,
    })
}

/// A validate_output hook's parameters: each borrows the answer (`&T`, checked to be the
/// agent's output type where it is registered) or its context (`&OutputContext<T>`), at most
/// once each, beside the run context (at its position). `None` after an error.
fn answer_params(
    cx: &Ctxt,
    attr: &HookAttr,
    krate: Option<&Path>,
    output: Option<&Type>,
    sig: &Signature,
    typed: &[&syn::PatType],
    run_context: Option<(usize, &RunContextParam)>,
) -> Option<AnswerParams> {
    let Some(declared) = output else {
        let span = attr.event_span.unwrap_or_else(|| sig.ident.span());
        cx.error_at(
            span,
            "a `validate_output` hook checks the agent's typed answer, and this agent has no output type: add `output = T` to `#[agent(...)]`",
        );
        return None;
    };
    let written = quote::quote!(#declared).to_string().replace(' ', "");
    let mut params = Vec::new();
    let (mut answer, mut context) = (false, false);
    for param in typed {
        let elem = match &*param.ty {
            Type::Reference(reference) if reference.mutability.is_none() => &*reference.elem,
            other => {
                cx.error_spanned_by(
                    other,
                    format!("a `validate_output` hook borrows the answer: write `&{written}`"),
                );
                return None;
            }
        };
        let is_context = crate::common::is_helper_type(elem, "OutputContext", krate);
        let seen = if is_context {
            &mut context
        } else {
            &mut answer
        };
        if std::mem::replace(seen, true) {
            cx.error_spanned_by(
                param,
                format!(
                    "a `validate_output` hook takes the answer `&{written}` and, if it needs them, the step and attempt in `&OutputContext<{written}>`, once each"
                ),
            );
            return None;
        }
        params.push(if is_context {
            AnswerParam::Context(elem.clone())
        } else {
            AnswerParam::Answer(elem.clone())
        });
    }
    if !answer && !context {
        cx.error_spanned_by(
            &sig.ident,
            format!(
                "a `validate_output` hook takes the answer: add a parameter `output: &{written}`"
            ),
        );
        return None;
    }
    if let Some((at, param)) = run_context {
        params.insert(at, AnswerParam::RunContext(param.written.clone()));
    }
    Some(AnswerParams {
        declared: declared.clone(),
        params,
    })
}

/// The declared return type (`None` for `()`).
fn return_type(sig: &Signature) -> Option<Type> {
    match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => Some((**ty).clone()),
    }
}
