//! `#[hook(EVENT, ...)]`: a lifecycle hook. Free functions expand here into a [`HookSet`] type;
//! methods inside an `#[agent]` impl are parsed with the same code and registered by the agent.
//!
//! [`HookSet`]: https://docs.rs/agent-core

mod events;
mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::common::{crate_path, pascal_case};
use crate::ctxt::Ctxt;

pub(crate) use expand::{MatcherCode, registration};
pub(crate) use parse::{HookAttr, HookFn, MatcherSpec, parse_hook};

/// Entry point of `#[hook]` on a free function.
pub(crate) fn entry(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let item: syn::ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_spanned_by(&input, "`#[hook]` goes on a function");
            let errors = cx.check();
            return quote!(#errors #input);
        }
    };
    let attr = HookAttr::parse(&cx, args, proc_macro2::Span::call_site());
    let krate = attr.crate_path.clone();
    let hook = match (attr.event, attr.event_span) {
        (Some(event), Some(span)) if event.name == "validate_output" => {
            cx.error_at(
                span,
                "a `validate_output` hook is typed on an agent's output type: make it a method of the `#[agent(output = T)]` impl, or add it with `AgentBuilder::validate_output`",
            );
            None
        }
        _ => parse_hook(&cx, attr, krate.as_ref(), None, None, &item.sig),
    };
    if let Some(receiver) = item.sig.receiver() {
        // Inside an impl block no items can be generated: the method is kept as written.
        cx.error_spanned_by(receiver, "`#[hook]` on a method needs `#[agent]` on its impl block, which collects the agent's hooks");
        let errors = cx.check();
        return quote!(#item #errors);
    }
    let ident = &item.sig.ident;
    let vis = &item.vis;
    let set_ty = format_ident!("{}", pascal_case(&ident.to_string()), span = ident.span());
    let doc = format!(
        "The `{ident}` hook, to attach with `#[agent(hooks({ident}))]` or `AgentBuilder::hooks`."
    );
    let set_struct = quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #set_ty;
    };
    let generated = match &hook {
        Some(hook) if !cx.has_errors() => {
            let krate = crate_path(hook.attr.crate_path.as_ref());
            let matcher = hook
                .attr
                .matcher
                .as_ref()
                .map(|(spec, _)| MatcherCode::Runtime(spec));
            let register = registration(hook, &krate, None, matcher.as_ref());
            quote! {
                #set_struct

                impl #krate::HookSet for #set_ty {
                    fn register(self, builder: #krate::AgentBuilder) -> #krate::AgentBuilder {
                        #register
                    }
                }
            }
        }
        // After an error the hook set type is still generated, registering nothing, so code
        // attaching it compiles on and the error is the only one reported.
        _ => {
            let krate = crate_path(krate.as_ref());
            quote! {
                #set_struct

                impl #krate::HookSet for #set_ty {
                    fn register(self, builder: #krate::AgentBuilder) -> #krate::AgentBuilder {
                        builder
                    }
                }
            }
        }
    };
    let errors = cx.check();
    quote! {
        #item
        #generated
        #errors
    }
}
