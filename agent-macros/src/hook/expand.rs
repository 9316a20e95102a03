//! The builder call that registers one hook.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use crate::common::{borrow_spanned_over, respan};
use syn::spanned::Spanned;

use super::parse::{AnswerParam, HookFn, MatcherSpec};

/// How a tool hook's matcher is registered.
pub(crate) enum MatcherCode<'a> {
    /// As written (free hooks, checked when the agent is built; and `dynamic` hooks, whose
    /// names and regex must also match the tools added at run time).
    Runtime(&'a MatcherSpec),
    /// Resolved at expansion time to these tool names (a matcher that is not `dynamic`).
    Resolved(Vec<String>),
}

fn matcher_tokens(
    krate: &TokenStream,
    matcher: Option<&MatcherCode<'_>>,
    dynamic: bool,
) -> TokenStream {
    let dynamic_call = dynamic.then(|| quote!(.dynamic()));
    match matcher {
        None => quote!(#krate::Matcher::all() #dynamic_call),
        Some(MatcherCode::Runtime(spec)) => {
            let base = match spec {
                MatcherSpec::Tool(lit) => quote!(#krate::Matcher::tool(#lit)),
                MatcherSpec::Tools(lits) => quote!(#krate::Matcher::tools([#(#lits),*])),
                MatcherSpec::Match(lit, _) => quote!(#krate::Matcher::regex(#lit)),
            };
            quote!(#base #dynamic_call)
        }
        Some(MatcherCode::Resolved(names)) => quote!(#krate::Matcher::tools([#(#names),*])),
    }
}

/// A tool hook's context type (`ToolCallContext<I>`, `ToolCallResultContext<I, O>`) with its
/// type arguments left to inference (`ToolCallContext<_>`).
fn inferred_args(ctx_ty: &syn::Type, tool: bool) -> syn::Type {
    let mut ctx_ty = ctx_ty.clone();
    if tool
        && let syn::Type::Path(path) = &mut ctx_ty
        && let Some(last) = path.path.segments.last_mut()
        && let syn::PathArguments::AngleBracketed(args) = &mut last.arguments
    {
        for arg in &mut args.args {
            if let syn::GenericArgument::Type(ty) = arg {
                *ty = syn::parse_quote!(_);
            }
        }
    }
    ctx_ty
}

/// An expression registering `hook` on `builder` (and, for methods, using `this: Arc<Self>`).
pub(crate) fn registration(
    hook: &HookFn,
    krate: &TokenStream,
    self_ty: Option<&syn::Type>,
    matcher: Option<&MatcherCode<'_>>,
) -> TokenStream {
    let event = hook.event;
    let name = hook.ident.to_string();
    let ident = &hook.ident;
    let marker = format_ident!("{}", event.marker);
    // A tool hook's input and output types are left to inference from the hook's own
    // signature, the one place they are written: a type that does not resolve is then one
    // error, there, rather than one more for each place the registration would name it.
    let event_ty = match (event.name, &hook.input_ty) {
        ("before_tool_call", Some(_)) => quote!(#krate::event::BeforeToolCall<_>),
        ("after_tool_call", Some(_)) => quote!(#krate::event::AfterToolCall<_, _>),
        _ => match &hook.answer {
            Some(answer) => {
                let declared = &answer.declared;
                quote!(#krate::event::ValidateOutput<#declared>)
            }
            None => quote!(#krate::event::#marker),
        },
    };
    // Errors about the context type land on the parameter's type; errors about the return type
    // land on the return type (or the function's name when it returns `()`).
    let ctx_span = hook.ctx_ty.span();
    let ret_span = hook
        .ret
        .as_ref()
        .map(|ret| ret.span())
        .unwrap_or_else(|| hook.ident.span());
    let ctx_ty = &inferred_args(&hook.ctx_ty, hook.input_ty.is_some());
    // The closure takes the event's own context and hands the hook its parameter type through
    // `ContextIs::cast`: a context of another event is then one error, on the parameter's type.
    let event_ctx = quote!(<#event_ty as #krate::Event>::Ctx);
    let cast = respan(
        quote!(<#event_ty as #krate::__private::ContextIs<#ctx_ty>>::cast),
        ctx_span,
    );
    let arg = quote_spanned!(ctx_span=> #cast(__ctx));
    let args = match (&hook.answer, &hook.run_context) {
        // A validate_output hook's answer goes through `AnswerIs`, so a type other than the
        // output type is one error, on that parameter's type.
        (Some(answer), _) => {
            let declared = &answer.declared;
            let args = answer.params.iter().map(|param| match param {
                AnswerParam::Answer(written) => {
                    let answer = respan(
                        quote!(#krate::__private::answer_as::<#declared, #written>),
                        written.span(),
                    );
                    quote_spanned!(written.span()=> #answer(&*__ctx.output))
                }
                AnswerParam::Context(written) => {
                    let cast = respan(
                        quote!(<#event_ty as #krate::__private::ContextIs<#written>>::cast),
                        written.span(),
                    );
                    quote_spanned!(written.span()=> #cast(__ctx))
                }
                AnswerParam::RunContext(written) => {
                    borrow_spanned_over(&format_ident!("__run_context"), written)
                }
            });
            quote!(#(#args),*)
        }
        (None, None) => arg,
        (None, Some(param)) => {
            let context = borrow_spanned_over(&format_ident!("__run_context"), &param.written);
            if param.first {
                quote!(#context, #arg)
            } else {
                quote!(#arg, #context)
            }
        }
    };
    let callee = match (self_ty, hook.has_receiver) {
        (Some(self_ty), true) => quote_spanned!(ctx_span=> <#self_ty>::#ident(&__this, #args)),
        (Some(self_ty), false) => quote_spanned!(ctx_span=> <#self_ty>::#ident(#args)),
        (None, _) => quote_spanned!(ctx_span=> #ident(#args)),
    };
    let awaited = hook.is_async.then(|| quote!(.await));
    // With a run context parameter the hook returns `Result<R, RunContextError>`: a turn without
    // the context is the hook's error, handled by its failure policy.
    let body = match &hook.run_context {
        None => quote_spanned!(ctx_span=> #callee #awaited),
        Some(param) => {
            let declared = &param.declared;
            quote_spanned! {ctx_span=>
                match #krate::run_context::<#declared>() {
                    ::core::result::Result::Ok(__run_context) => {
                        ::core::result::Result::Ok(#callee #awaited)
                    }
                    ::core::result::Result::Err(error) => ::core::result::Result::Err(error),
                }
            }
        }
    };
    let closure = if hook.is_async {
        let inner_capture = hook.has_receiver.then(
            || quote!(let __this = <::std::sync::Arc<_> as ::core::clone::Clone>::clone(&__this);),
        );
        quote_spanned! {ctx_span=>
            move |__ctx: &#event_ctx| {
                #inner_capture
                ::std::boxed::Box::pin(async move { #body })
            }
        }
    } else {
        quote_spanned!(ctx_span=> move |__ctx: &#event_ctx| #body)
    };
    // Methods capture the agent (`this: Arc<Self>`) in a block; free functions need no block.
    let closure = if hook.has_receiver {
        quote_spanned!(ctx_span=> {
            let __this = <::std::sync::Arc<_> as ::core::clone::Clone>::clone(&this);
            #closure
        })
    } else {
        closure
    };
    let constructor = if hook.is_async {
        quote!(from_async)
    } else {
        quote!(sync)
    };
    let constructor_path = respan(quote!(#krate::Hook::<#event_ty>::#constructor), ret_span);
    let mut arguments =
        proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#name, #closure));
    arguments.set_span(ret_span);
    let body = quote!(#constructor_path #arguments);
    // Only the options the attribute sets are applied, through `Hook`'s setters (no struct
    // literal of `HookOptions`, which may grow).
    let priority = hook
        .attr
        .priority
        .map(|priority| quote!(.priority(#priority)));
    let on_error = hook.attr.on_error.map(|(open, _)| {
        let policy = if open {
            quote!(FailOpen)
        } else {
            quote!(FailClosed)
        };
        quote!(.on_error(#krate::FailurePolicy::#policy))
    });
    let timeout = hook
        .attr
        .timeout_ms
        .map(|ms| quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    let hook_value = quote!(#body #priority #on_error #timeout);
    match event.name {
        "before_tool_call" => {
            let matcher = matcher_tokens(krate, matcher, hook.attr.dynamic);
            quote!(builder.before_tool_call(#matcher, #hook_value))
        }
        "after_tool_call" => {
            let matcher = matcher_tokens(krate, matcher, hook.attr.dynamic);
            quote!(builder.after_tool_call(#matcher, #hook_value))
        }
        "validate_output" => quote!(builder.validate_output(#hook_value)),
        _ => quote!(builder.hook(#hook_value)),
    }
}
