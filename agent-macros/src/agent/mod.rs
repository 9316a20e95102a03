//! `#[agent]` on an impl block: collects its `#[tool]` and `#[hook]` methods, checks every hook
//! matcher against the agent's tools, and implements `AgentSpec` through the builder API.

mod check;
mod expand;
mod parse;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Entry point of `#[agent]`.
pub(crate) fn entry(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let mut item: syn::ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_spanned_by(
                &input,
                "`#[agent]` goes on an inherent impl block: `#[agent] impl MyAgent { ... }`",
            );
            let errors = cx.check();
            return quote!(#errors #input);
        }
    };
    let attr = parse::AgentAttr::parse(&cx, args);
    let model = parse::collect(&cx, attr, &mut item);
    let plan = check::check(&cx, &model);
    let generated = if cx.has_errors() {
        TokenStream::new()
    } else {
        expand::expand(&model, &plan)
    };
    let errors = cx.check();
    quote! {
        #item
        #generated
        #errors
    }
}
